//! Claude Code's failed model calls as canonical Errors: `system` `api_error` / `error`
//! records, synthetic `API Error: …` messages and AWS-style error envelopes, their codes by
//! table E, Claude Code's own `error` field, the HTTP status or the text.

use serde_json::{json, Map, Value};

use super::ClaudeCodeImporter;
use crate::event::Event;
use crate::import::{error_object, Format};

impl ClaudeCodeImporter {
    /// A `system` `api_error` (one failed attempt Claude Code retries: `retryAttempt` of
    /// `maxRetries`) or an `error` record: `model/end{error}` in the open turn, one per
    /// attempt; the reducer marks it retried / recovered from what follows.
    pub(super) fn api_error_record(
        &mut self,
        out: &mut Vec<Event>,
        session: &str,
        record: Map<String, Value>,
    ) {
        let mut err = record_error(&record);
        let n = |k: &str| record.get(k).filter(|v| v.is_number()).cloned();
        if let Some(Value::Object(d)) = err.get_mut("details") {
            for (k, key) in [
                ("retry_attempt", "retryAttempt"),
                ("max_retries", "maxRetries"),
                ("retry_in_ms", "retryInMs"),
            ] {
                if let Some(v) = n(key) {
                    d.insert(k.into(), v);
                }
            }
        }
        let turn = self.open_turn(session);
        self.push(
            out,
            0,
            session,
            turn.as_deref(),
            "model/end",
            json!({ "error": err }),
        );
    }
}

/// The Error of a `system` `api_error` or an `error` record: the provider's error nested in
/// `error` (`{status, error: {type: "error", error: {type, message}}}`, or a bare
/// `{type, message}` / string), the HTTP status from `error.status` / `apiErrorStatus`,
/// the code by table E, else by the status ([`crate::import::status_error_code`]).
fn record_error(record: &Map<String, Value>) -> Value {
    let e = record.get("error");
    let mut nested: Vec<&Value> = Vec::new();
    let mut cur = e;
    while let Some(v) = cur {
        nested.push(v);
        cur = v.get("error").filter(|x| x.is_object() || x.is_string());
        if nested.len() > 4 {
            break;
        }
    }
    fn typed<'a>(v: &&'a Value) -> Option<&'a str> {
        v.get("type")
            .and_then(Value::as_str)
            .filter(|t| *t != "error")
    }
    let raw = nested
        .iter()
        .rev()
        .find_map(typed)
        .or_else(|| nested.iter().rev().find_map(|v| v.as_str()))
        .or_else(|| {
            record
                .get("cause")
                .or_else(|| e.and_then(|e| e.get("connection")))
                .and_then(|c| c.get("code"))
                .and_then(Value::as_str)
        });
    let message = nested
        .iter()
        .rev()
        .find_map(|v| {
            // AWS-style bodies spell it `Message`.
            v.get("message")
                .or_else(|| v.get("Message"))
                .and_then(Value::as_str)
        })
        .or_else(|| {
            record
                .get("cause")
                .and_then(|c| c.get("message"))
                .and_then(Value::as_str)
        })
        .or_else(|| record.get("content").and_then(Value::as_str))
        .or_else(|| record.get("message").and_then(Value::as_str))
        .unwrap_or_default();
    let status = nested
        .iter()
        .find_map(|v| v.get("status").and_then(Value::as_i64))
        .or_else(|| record.get("apiErrorStatus").and_then(Value::as_i64))
        .or_else(|| record.get("status").and_then(Value::as_i64));
    let retrying = record.get("retryAttempt").is_some();
    let mut err = coded(error_object(
        Format::ClaudeCode,
        raw,
        message,
        Some(retrying),
        status,
    ));
    // A connection that failed before any HTTP status (`ECONNRESET`, …).
    let code = err["code"].as_str().unwrap_or("");
    if status.is_none() && !code.starts_with("completion_") {
        if let Some(c) = text_error_code(message).or(raw.map(|_| "completion_failed")) {
            err["code"] = json!(c);
        }
    }
    err
}

/// An Error whose raw code table E does not list takes its code from the HTTP status where
/// the status decides (400 → `completion_rejected`, 429 → `completion_rate_limited`, …).
fn coded(mut err: Value) -> Value {
    let raw = err["details"]["raw_code"].as_str().map(str::to_string);
    let listed = raw
        .as_deref()
        .and_then(|r| crate::import::canonical_error_code(Format::ClaudeCode, r))
        .is_some();
    if !listed {
        if let Some(code) = err["details"]["http_status"]
            .as_i64()
            .and_then(crate::import::status_error_code)
        {
            err["code"] = json!(code);
        }
    }
    err
}

/// An AWS-style error object (`{"__type": "<namespace>#<Name>", "message"|"Message": …}`):
/// the Error with `<Name>` as raw code. `None` when the object has no `__type`.
pub(super) fn aws_error(v: &Value) -> Option<Value> {
    let ty = v.get("__type").and_then(Value::as_str)?;
    let raw = ty.rsplit('#').next().unwrap_or(ty);
    let message = ["message", "Message"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .unwrap_or(raw);
    Some(coded(error_object(
        Format::ClaudeCode,
        Some(raw),
        message,
        None,
        None,
    )))
}

/// The Error of an `isApiErrorMessage` line (Claude Code's synthetic message when it gave up
/// on a call): `API Error: <status> {"type":"error","error":{"type":…,"message":…}}`, also
/// after a prefix (`Please run /login · API Error: 403 …`) or with a plain message
/// (`API Error: 529 Overloaded.`, `You've hit your session limit · resets …`).
///
/// Raw code: the body's `error.type`, else the record's `error` field (`authentication_failed`,
/// `billing_error`, `rate_limit`, …). HTTP status: the text's `API Error: NNN`, else
/// `apiErrorStatus`. Code: table E on the body type, else [`cc_error_code`] on the `error`
/// field and the text, else the status, else the text (`timed out` → timed out, a lost
/// connection → failed).
pub(super) fn api_error(text: &str, error_field: Option<&str>, status_field: Option<i64>) -> Value {
    let rest = match text.find("API Error:") {
        Some(i) => text[i + "API Error:".len()..].trim(),
        None => text.trim(),
    };
    let (status, rest) = match rest.split_once(' ').unwrap_or((rest, "")) {
        (n, r)
            if n.trim_end_matches('.').len() == 3
                && n.bytes().take(3).all(|b| b.is_ascii_digit()) =>
        {
            (n[..3].parse::<i64>().ok(), r.trim())
        }
        _ => (status_field, rest),
    };
    let status = status.or(status_field);
    let body: Option<Value> = rest
        .find('{')
        .and_then(|i| serde_json::from_str(&rest[i..]).ok());
    let inner = body.as_ref().and_then(|b| b.get("error"));
    let body_type = inner
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    let field = error_field.filter(|f| !f.is_empty());
    let raw = body_type.or(field);
    let message = inner
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or(text);
    let mut err = coded(error_object(Format::ClaudeCode, raw, message, None, status));
    let listed = body_type
        .is_some_and(|t| crate::import::canonical_error_code(Format::ClaudeCode, t).is_some());
    if !listed {
        if let Some(code) = field.and_then(|f| cc_error_code(f, text)) {
            err["code"] = json!(code);
        } else if err["details"]["http_status"].is_null() {
            if let Some(code) = text_error_code(text) {
                err["code"] = json!(code);
            }
        }
    }
    if let (Some(b), Some(f)) = (body_type, field) {
        if b != f {
            err["details"]["error_field"] = json!(f);
        }
    }
    err
}

/// Claude Code's own classification of a failed call (the `error` field of its synthetic
/// message) in SEMANTICS §4 terms. A `rate_limit` whose text names a spent plan quota
/// (`You've hit your session limit`, `usage limit`) is `completion_billing_denied`: waiting
/// for the window to reset, not an automatic retry. `unknown`, `invalid_request` and new
/// values: `None` (the HTTP status decides).
fn cc_error_code(field: &str, text: &str) -> Option<&'static str> {
    Some(match field {
        "authentication_failed" | "forbidden" | "oauth_org_not_allowed" => {
            "completion_unauthorized"
        }
        "billing_error" => "completion_billing_denied",
        "rate_limit" if quota_spent(text) => "completion_billing_denied",
        "rate_limit" => "completion_rate_limited",
        "server_error" | "overloaded" => "completion_unavailable",
        _ => return None,
    })
}

/// Whether a rate-limit message names a spent plan quota (session / weekly / usage limit)
/// rather than a per-minute rate.
fn quota_spent(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "session limit",
        "weekly limit",
        "usage limit",
        "limit reached",
        "out of extra usage",
    ]
    .iter()
    .any(|k| t.contains(k))
}

/// The code a failure text without HTTP status names: a timeout, a lost connection, or a
/// response without a usable body (Claude Code 2.1.x: "API returned an empty or malformed
/// response (HTTP 200)", `error: unknown`).
fn text_error_code(text: &str) -> Option<&'static str> {
    let t = text.to_ascii_lowercase();
    if t.contains("timed out") || t.contains("timeout") {
        Some("completion_timed_out")
    } else if t.contains("connection")
        || t.contains("stalled")
        || t.contains("socket")
        || t.contains("malformed response")
        || t.contains("empty response")
    {
        Some("completion_failed")
    } else {
        None
    }
}
