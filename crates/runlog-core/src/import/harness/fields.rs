//! Field helpers of the harness importer: native seqs, turn ids, packed rows, usage, model
//! failures, message text, subagent end status and sibling parent files.

use serde_json::{json, Map, Value};

use super::SRC;
use crate::import::{error_object, usage_disjoint};

/// A native seq; absurd values (beyond 2^62, where canonical seqs end) count as missing.
pub(super) fn native_seq(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n < 1 << 62)
}

/// `String(data.turn)`.
pub(super) fn turn_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(super) fn text_data(text: Option<&Value>) -> Value {
    json!({ "text": text.and_then(Value::as_str).unwrap_or_default() })
}

pub(super) fn with_src_seq(mut d: Value, native: Option<u64>) -> Value {
    if let (Value::Object(m), Some(n)) = (&mut d, native) {
        m.insert("src_seq".into(), n.into());
    }
    d
}

/// How many native seqs a packed `*-chunks` row spans.
pub(super) fn packed_len(rec: &Map<String, Value>) -> Option<usize> {
    let ty = rec.get("type").and_then(Value::as_str)?;
    if !ty.ends_with("-chunks") {
        return None;
    }
    let d = rec.get("data")?;
    d.get("texts")
        .or_else(|| d.get("args"))
        .and_then(Value::as_array)
        .map(Vec::len)
}

/// The times (ms) of a packed row's pieces: `time0` plus the `dt` gaps between pieces; None
/// when `time0` is stripped.
pub(super) fn piece_times(
    rec: &Map<String, Value>,
    data: &Map<String, Value>,
    n: usize,
) -> Option<Vec<i64>> {
    let t0 = rec
        .get("time0")
        .or_else(|| data.get("time0"))
        .or_else(|| rec.get("time"))
        .and_then(Value::as_i64)
        .filter(|t| *t != 0)?;
    let dt: Vec<i64> = data
        .get("dt")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_i64().unwrap_or(0)).collect())
        .unwrap_or_default();
    // `dt` has one gap per piece after the first (or, if as long as the pieces, one each).
    let shift = usize::from(dt.len() < n);
    let mut t = t0;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i >= shift {
            if let Some(d) = dt.get(i - shift) {
                t = t.saturating_add(*d).max(t);
            }
        }
        out.push(t);
    }
    Some(out)
}

/// Harness usage (disjoint cache counts) as canonical Usage.
pub(super) fn harness_usage(u: &Value) -> Value {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut v = usage_disjoint(
        n("inputTokens"),
        n("cacheReadTokens"),
        n("cacheWriteTokens"),
        n("outputTokens"),
    );
    if let Value::Object(m) = &mut v {
        m.insert("reasoning_tokens".into(), n("reasoningTokens").into());
    }
    v
}

/// An `LlmFailure{message, code, status?, providerRetryAfterMs?, requestId?}` as an Error.
pub(super) fn failure_error(f: &Map<String, Value>, retryable: bool) -> Value {
    let mut e = error_object(
        SRC,
        f.get("code").and_then(Value::as_str),
        f.get("message").and_then(Value::as_str).unwrap_or_default(),
        Some(retryable),
        f.get("status").and_then(Value::as_i64),
    );
    let extra: Vec<(&str, &Value)> = [
        ("providerRetryAfterMs", "retry_after_ms"),
        ("requestId", "request_id"),
    ]
    .into_iter()
    .filter_map(|(k, name)| f.get(k).map(|v| (name, v)))
    .collect();
    if !extra.is_empty() {
        if let Some(obj) = e.as_object_mut() {
            let details = obj.entry("details").or_insert(Value::Null);
            if !details.is_object() {
                *details = Value::Object(Map::new());
            }
            if let Some(dm) = details.as_object_mut() {
                for (k, v) in extra {
                    dm.insert(k.into(), v.clone());
                }
            }
        }
    }
    e
}

/// The `model/end` of a `finish` chunk, and whether it carries an error.
pub(super) fn model_end(chunk: &Map<String, Value>, usage: Option<Value>) -> (Value, bool) {
    let reason = chunk.get("reason");
    let kind = reason.and_then(|r| r.get("kind")).and_then(Value::as_str);
    let mut d = Map::new();
    if let Some(k) = kind {
        d.insert("finish_reason".into(), k.into());
    }
    if let Some(u) = usage {
        d.insert("usage".into(), u);
    }
    let failure = reason
        .and_then(|r| r.get("failure"))
        .and_then(Value::as_object);
    let failed = match failure {
        Some(f) => {
            d.insert("error".into(), failure_error(f, false));
            true
        }
        None if kind == Some("error") => {
            d.insert(
                "error".into(),
                error_object(SRC, None, "model call failed", None, None),
            );
            true
        }
        None => false,
    };
    (Value::Object(d), failed)
}

/// The text parts of an `assistant/message` (`data.message.content`, legacy `data.content`).
pub(super) fn message_text(data: &Map<String, Value>) -> String {
    let content = data
        .get("message")
        .and_then(|m| m.get("content"))
        .or_else(|| data.get("content"))
        .and_then(Value::as_array);
    let mut text = String::new();
    for part in content.into_iter().flatten() {
        if part.get("type").and_then(Value::as_str) == Some("text") {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
        }
    }
    text
}

/// `subagent.finished{stopReason}` to `session/end.status`.
pub(super) fn session_end_status(stop: Option<&str>) -> &'static str {
    match stop {
        Some("completed" | "max-tokens" | "max_tokens" | "refusal" | "ok") => "closed",
        Some("aborted" | "cancelled") => "cancelled",
        _ => "failed",
    }
}

/// The parent of a subagent log whose header does not name it usably: `session.N.jsonl`
/// is the child of `session.jsonl` in the same folder, named by that file's path.
pub(super) fn sibling_parent(rel: &str) -> Option<String> {
    let (dir, name) = match rel.rsplit_once('/') {
        Some((d, n)) => (Some(d), n),
        None => (None, rel),
    };
    let (num, ext) = name.strip_prefix("session.")?.split_once('.')?;
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let parent = format!("session.{ext}");
    Some(match dir {
        Some(d) => format!("{d}/{parent}"),
        None => parent,
    })
}
