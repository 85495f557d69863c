//! The OpenCode importer (docs/importers/opencode.md): reads what `opencode run --format json`
//! writes, one event per line `{type, timestamp (ms), sessionID, part | error}` with `type`
//! `step_start`, `text`, `reasoning`, `tool_use`, `step_finish` or `error` (OpenCode's
//! `cli/cmd/run.ts`), and maps it to canonical events.
//!
//! - root = session = `sessionID`; turn = the `messageID` of the part that opened it (the
//!   stream does not carry the prompt); ts = `timestamp`; seq = line order.
//! - The first record while no turn is open **opens** one, inferred: `inbox/receipt{kind:
//!   prompt, inferred}` + `turn/start{inferred}` (a `step_start` is that record; a later
//!   `step_start` is kept as `opencode:step_start`).
//! - `text` / `reasoning` → `text/delta` / `reasoning/delta`; `tool_use` → `tool/call` +
//!   `tool/result{status}` (`completed` → ok, `error` → error, a rejected permission →
//!   denied); `step_finish` → `model/end{finish_reason: reason, usage, cost}`.
//! - A `step_finish` whose reason is not `tool-calls` ends the turn (inferred) with a
//!   synthetic `agent/idle`: `stop` → `end_turn`, `length` → `max_tokens`, `content-filter`
//!   → `refusal`, other reasons kept. An `error` → `model/end{error}` and `turn/end{kind:
//!   error}` (`MessageAbortedError`: `aborted`) and the idle; a further `error` with no turn
//!   open (OpenCode repeats a failure as a generic server error) is kept as `opencode:error`.
//!
//! A file that opens as one JSON document over many lines (a pretty-printed `{`), or a line
//! that is a whole document of OpenCode's session storage, is read by
//! [`super::opencode_storage`] instead; the documents one a line of a file (an OpenCode
//! database's rows, as [`super::opencode_db`] reads them) are mapped at its end, each
//! other's neighbours.

use serde_json::{json, Map, Value};

use super::opencode_store::{Rows, Store};
use super::{
    event, flag, id_or, opencode_storage, status_error_code, synthetic_ts, token_count, unmapped,
    usage_disjoint, FileContext, Format, Importer, Unmapped,
};
use crate::decode::excerpt;
use crate::event::Event;
use crate::import::Payloads;
use std::collections::HashMap;

pub struct OpencodeImporter {
    payloads: Payloads,
    name: String,
    rel: String,
    /// Whether a line was read yet (the first tells a document from a stream).
    started: bool,
    /// The lines of a document over many lines (`None`: a stream).
    document: Option<Vec<(u64, Vec<u8>)>>,
    /// Storage documents one a line (a stream of them, or an OpenCode database's rows): held
    /// with their lines and mapped at the end, each other's neighbours.
    docs: Vec<(u64, Map<String, Value>)>,
    /// Rejects found at the end of the file: (line, reason, excerpt).
    late_rejects: Vec<(u64, String, String)>,
    next_seq: u64,
    open_turn: Option<String>,
    /// The open turn's last text (an inferred end's text).
    last_text: Option<String>,
    /// The last record ended a turn with an error.
    after_error: bool,
}

/// Whether a record is one of `opencode run --format json`.
pub fn is_run_event(o: &Map<String, Value>) -> bool {
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
    let part_ty = o
        .get("part")
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str);
    o.get("sessionID").is_some_and(Value::is_string)
        && match ty {
            "step_start" | "text" | "reasoning" | "tool_use" | "step_finish" => matches!(
                part_ty,
                Some("step-start" | "text" | "reasoning" | "tool" | "step-finish")
            ),
            "error" => o.get("error").is_some_and(Value::is_object),
            _ => false,
        }
}

impl OpencodeImporter {
    pub fn new(ctx: &FileContext) -> Self {
        OpencodeImporter {
            payloads: Payloads::of(ctx),
            name: ctx.name.clone(),
            rel: ctx.rel.clone(),
            started: false,
            document: None,
            docs: Vec::new(),
            late_rejects: Vec::new(),
            next_seq: 0,
            open_turn: None,
            last_text: None,
            after_error: false,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        out: &mut Vec<Event>,
        session: &str,
        ts: (i64, bool),
        turn: Option<&str>,
        kind: &str,
        mut data: Value,
    ) {
        if ts.1 {
            flag(&mut data, "ts_synthetic");
        }
        out.push(event(
            self.next_seq,
            ts.0,
            session,
            session,
            turn,
            kind,
            self.payloads.data(kind, data),
        ));
        self.next_seq += 1;
    }

    /// Opens an inferred turn unless one is open; returns the open turn.
    fn ensure_turn(
        &mut self,
        out: &mut Vec<Event>,
        session: &str,
        ts: (i64, bool),
        part: Option<&Value>,
        line_no: u64,
    ) -> String {
        if let Some(t) = &self.open_turn {
            return t.clone();
        }
        let msg = part
            .and_then(|p| p.get("messageID"))
            .and_then(Value::as_str);
        let turn = id_or(msg, &format!("{}:{}", self.rel, line_no));
        let data = json!({ "message_id": turn, "kind": "prompt", "inferred": true });
        self.push(out, session, ts, None, "inbox/receipt", data);
        self.push(
            out,
            session,
            ts,
            Some(&turn),
            "turn/start",
            json!({ "inferred": true }),
        );
        self.open_turn = Some(turn.clone());
        self.last_text = None;
        turn
    }

    /// `turn/end{reason, inferred}` of the open turn + the synthetic idle.
    fn end(&mut self, out: &mut Vec<Event>, session: &str, ts: (i64, bool), reason: Value) {
        let Some(turn) = self.open_turn.take() else {
            return;
        };
        let mut data = json!({ "reason": reason, "inferred": true });
        if let Some(t) = self.last_text.take() {
            if data["reason"]["kind"] == "end_turn" {
                data["text"] = Value::String(t);
            }
        }
        self.push(out, session, ts, Some(&turn), "turn/end", data);
        let idle = json!({ "synthetic": true, "inferred": true });
        self.push(out, session, ts, None, "agent/idle", idle);
    }

    fn tool(
        &mut self,
        out: &mut Vec<Event>,
        session: &str,
        ts: (i64, bool),
        turn: &str,
        part: &Value,
    ) {
        let state = part.get("state");
        let call_id = part
            .get("callID")
            .and_then(Value::as_str)
            .or_else(|| part.get("id").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string();
        let data = json!({
            "call_id": call_id,
            "name": part.get("tool").cloned().unwrap_or(Value::Null),
            "arguments": state.and_then(|s| s.get("input")).cloned().unwrap_or(Value::Null),
        });
        self.push(out, session, ts, Some(turn), "tool/call", data);
        if let Some(data) = tool_result(&call_id, state) {
            self.push(out, session, ts, Some(turn), "tool/result", data);
        }
    }
}

/// A `step_finish`'s `tokens` as canonical Usage: `input` is fresh input (cache reads and
/// writes are apart), `reasoning` is output apart from `output`.
pub(crate) fn usage(t: &Value) -> Value {
    let n = |v: Option<&Value>| token_count(v).unwrap_or(0);
    let cache = t.get("cache");
    let reasoning = n(t.get("reasoning"));
    let mut u = usage_disjoint(
        n(t.get("input")),
        n(cache.and_then(|c| c.get("read"))),
        n(cache.and_then(|c| c.get("write"))),
        n(t.get("output")) + reasoning,
    );
    u["reasoning_tokens"] = Value::from(reasoning);
    u
}

/// The turn end a model step's finish reason implies (`None`: the turn goes on).
pub(crate) fn end_kind(reason: &str) -> Option<&str> {
    Some(match reason {
        "tool-calls" | "" => return None,
        "stop" => "end_turn",
        "length" => "max_tokens",
        "content-filter" => "refusal",
        other => other,
    })
}

/// OpenCode's session error (`{name, data: {message, statusCode?, isRetryable?}}`) as a
/// canonical Error: the raw code is `name`.
pub fn error_object(e: &Value) -> Value {
    let name = e.get("name").and_then(Value::as_str).unwrap_or("error");
    let d = e.get("data");
    let message = d
        .and_then(|d| d.get("message"))
        .and_then(Value::as_str)
        .unwrap_or(name);
    let status = d.and_then(|d| d.get("statusCode")).and_then(Value::as_i64);
    let retryable = d
        .and_then(|d| d.get("isRetryable"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let low = message.to_ascii_lowercase();
    let code = match name {
        "ProviderAuthError" => Some("completion_unauthorized"),
        "ContextOverflowError" => Some("completion_context_too_large"),
        _ if low.contains("insufficient_quota") || low.contains("exceeded your current quota") => {
            Some("completion_billing_denied")
        }
        _ => status.and_then(status_error_code),
    };
    let mut details = Map::new();
    details.insert("raw_code".into(), Value::String(name.to_string()));
    if let Some(s) = status {
        details.insert("http_status".into(), Value::from(s));
    }
    json!({
        "code": code.unwrap_or(name),
        "message": message,
        "retryable": retryable,
        "details": Value::Object(details),
    })
}

impl Importer for OpencodeImporter {
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        if !std::mem::replace(&mut self.started, true) && line.trim_ascii() == b"{" {
            self.document = Some(Vec::new());
        }
        if let Some(held) = &mut self.document {
            held.push((line_no, line.to_vec()));
            return Ok(());
        }
        let record = Unmapped::parse(line)?;
        if opencode_storage::doc_kind(&record).is_some() {
            self.docs.push((line_no, record));
            return Ok(());
        }
        let ty = record
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("record")
            .to_string();
        let session = id_or(record.get("sessionID").and_then(Value::as_str), &self.rel);
        let ts = match record.get("timestamp").and_then(Value::as_i64) {
            Some(ms) if ms > 0 => (ms.saturating_mul(1000), false),
            _ => (synthetic_ts(0, line_no), true),
        };
        let part = record.get("part");
        let was_error = std::mem::take(&mut self.after_error);
        match ty.as_str() {
            "step_start" if self.open_turn.is_none() => {
                self.ensure_turn(out, &session, ts, part, line_no);
            }
            "text" | "reasoning" => {
                let turn = self.ensure_turn(out, &session, ts, part, line_no);
                let text = part.and_then(|p| p.get("text")).and_then(Value::as_str);
                let text = text.unwrap_or_default().to_string();
                let kind = if ty == "text" {
                    "text/delta"
                } else {
                    "reasoning/delta"
                };
                if ty == "text" {
                    self.last_text = Some(text.clone());
                }
                self.push(
                    out,
                    &session,
                    ts,
                    Some(&turn),
                    kind,
                    json!({ "text": text }),
                );
            }
            "tool_use" if part.is_some() => {
                let turn = self.ensure_turn(out, &session, ts, part, line_no);
                self.tool(out, &session, ts, &turn, part.unwrap_or(&Value::Null));
            }
            "step_finish" => {
                let turn = self.ensure_turn(out, &session, ts, part, line_no);
                let p = part.unwrap_or(&Value::Null);
                let reason = p.get("reason").and_then(Value::as_str).unwrap_or("");
                let mut data = json!({});
                if !reason.is_empty() {
                    data["finish_reason"] = Value::String(reason.to_string());
                }
                if let Some(t) = p.get("tokens").filter(|t| t.is_object()) {
                    data["usage"] = usage(t);
                }
                if let Some(c) = p.get("cost").filter(|c| c.is_number()) {
                    data["cost"] = c.clone();
                }
                self.push(out, &session, ts, Some(&turn), "model/end", data);
                if let Some(kind) = end_kind(reason) {
                    self.end(out, &session, ts, json!({ "kind": kind }));
                }
            }
            "error" if self.open_turn.is_some() || !was_error => {
                let e = record.get("error").cloned().unwrap_or(Value::Null);
                let turn = self.ensure_turn(out, &session, ts, part, line_no);
                let err = error_object(&e);
                let data = json!({ "error": err.clone() });
                self.push(out, &session, ts, Some(&turn), "model/end", data);
                let reason = match e.get("name").and_then(Value::as_str) {
                    Some("MessageAbortedError") => json!({ "kind": "aborted" }),
                    _ => json!({ "kind": "error", "error": err }),
                };
                self.end(out, &session, ts, reason);
                self.after_error = true;
            }
            _ => {
                let turn = self.open_turn.clone();
                let mut data = Value::Object(record);
                if ts.1 {
                    flag(&mut data, "ts_synthetic");
                }
                let kind = unmapped(Format::Opencode, &ty);
                out.push(event(
                    self.next_seq,
                    ts.0,
                    &session,
                    &session,
                    turn.as_deref(),
                    &kind,
                    self.payloads.data(&kind, data),
                ));
                self.next_seq += 1;
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let docs = std::mem::take(&mut self.docs);
        if !docs.is_empty() {
            let rows = Rows::index(docs.iter().map(|(_, d)| d));
            let store = Store::Rows(&rows);
            let before = out.len();
            for (line, doc) in docs {
                opencode_storage::map_in(Some(&store), &self.rel, line, doc, out);
            }
            // Numbered per agent in time order, as the same documents read from their own
            // files are (time, then where each was read, then its order in its document).
            let mapped = &mut out[before..];
            mapped.sort_by_key(|e| (e.ts, e.line, e.seq));
            let mut next: HashMap<String, u64> = HashMap::new();
            for ev in mapped {
                let n = next.entry(rows.top(&ev.root)).or_default();
                ev.seq = *n;
                *n += 1;
            }
        }
        let Some(held) = self.document.take() else {
            return;
        };
        let mut text = Vec::new();
        for (_, l) in &held {
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        let first = held.first().map_or(1, |h| h.0);
        match serde_json::from_slice::<Value>(&text) {
            Ok(Value::Object(doc)) => opencode_storage::map(&self.name, &self.rel, first, doc, out),
            parsed => {
                let reason = match parsed {
                    Err(e) => format!("invalid JSON document: {e}"),
                    Ok(_) => "the document is not a JSON object".to_string(),
                };
                for (n, l) in held {
                    self.late_rejects.push((n, reason.clone(), excerpt(&l)));
                }
            }
        }
    }

    fn rejects(&mut self) -> Vec<(u64, String, String)> {
        std::mem::take(&mut self.late_rejects)
    }
}

/// The `tool/result` data of a tool part whose `state` ended: `completed` → `ok`, `error` →
/// `error`, or `denied` when the user rejected permission; `None` while it runs.
pub(super) fn tool_result(call_id: &str, state: Option<&Value>) -> Option<Value> {
    let raw = state
        .and_then(|s| s.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let err = state.and_then(|s| s.get("error")).and_then(Value::as_str);
    let status = match raw {
        "completed" => "ok",
        "error" if err.is_some_and(|e| e.contains("rejected permission")) => "denied",
        "error" => "error",
        _ => return None,
    };
    let mut data = json!({ "call_id": call_id, "status": status, "raw_status": raw });
    if let Some(e) = err {
        data["detail"] = Value::String(e.to_string());
    }
    Some(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    #[test]
    fn a_failed_run_is_one_failed_turn_and_its_repeat_is_kept() {
        let lines = [
            r#"{"type":"error","timestamp":1778777973456,"sessionID":"ses_1","error":{"name":"UnknownError","data":{"message":"Model not found: nonexistent/nonexistent."}}}"#,
            r#"{"type":"error","timestamp":1778777973456,"sessionID":"ses_1","error":{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details."}}}"#,
        ];
        let mut imp = OpencodeImporter::new(&context("run.jsonl"));
        let (evs, rejected) = feed(&mut imp, &lines);
        assert!(rejected.is_empty());
        let kinds: Vec<&str> = evs.iter().map(|e| &*e.kind).collect();
        assert_eq!(
            kinds,
            [
                "inbox/receipt",
                "turn/start",
                "model/end",
                "turn/end",
                "agent/idle",
                "opencode:error"
            ]
        );
        assert!(
            evs[3].data.contains(r#""raw_code":"UnknownError""#),
            "{}",
            evs[3].data
        );
    }

    #[test]
    fn a_storage_document_is_read_whole_and_a_broken_one_rejected_line_by_line() {
        let doc = [
            "{",
            r#"  "id": "msg_cbbd98650001z0awFImeNERFe5","#,
            r#"  "sessionID": "ses_1","#,
            r#"  "role": "user","#,
            r#"  "time": { "created": 1772678121053 }"#,
            "}",
        ];
        let mut imp = OpencodeImporter::new(&context("msg.json"));
        let (evs, rejected) = feed(&mut imp, &doc);
        assert!(rejected.is_empty() && imp.rejects().is_empty());
        let kinds: Vec<&str> = evs.iter().map(|e| &*e.kind).collect();
        assert_eq!(kinds, ["inbox/receipt", "turn/start"]);
        assert_eq!(
            evs[1].turn.as_deref(),
            Some("msg_cbbd98650001z0awFImeNERFe5")
        );
        assert_eq!(evs[1].line, 1);
        let mut imp = OpencodeImporter::new(&context("msg.json"));
        let (evs, _) = feed(&mut imp, &doc[..4]);
        assert!(evs.is_empty());
        let lines: Vec<u64> = imp.rejects().iter().map(|r| r.0).collect();
        assert_eq!(lines, [1, 2, 3, 4]);
    }

    #[test]
    fn api_errors_take_their_code_from_the_status() {
        let e = json!({"name":"APIError","data":{"message":"Overloaded","statusCode":529,"isRetryable":true}});
        let v = error_object(&e);
        assert_eq!(v["code"], "completion_unavailable");
        assert_eq!(v["details"]["http_status"], 529);
        assert_eq!(v["retryable"], true);
    }
}
