//! OpenAI Responses SSE chunks (docs/importers/openai.md): one stream event per line, bare JSON or
//! SSE-framed (`event:` lines are skipped, `data:` is stripped). One stream is one response,
//! so the response id is root, session and turn at once.
//!
//! | record | canonical |
//! |---|---|
//! | `response.created` | `session/start{parent: null, model}`, `turn/start` |
//! | `response.output_text.delta` / `response.reasoning_summary_text.delta` (and `reasoning_text`) | `text/delta` / `reasoning/delta` |
//! | `response.output_item.done` of a `function_call` | `tool/call{call_id, name, arguments}` (the item's arguments, else the joined `function_call_arguments.delta`s) |
//! | `response.completed` / `.incomplete` / `.failed` | `model/end{finish_reason: status, usage}` (inclusive usage) and `turn/end{kind: status, cause: incomplete_details.reason, text}`; no `turn/end` for a `completed` response that asks for function calls (the turn waits for their results) |
//! | `error{code}` | `model/end{error}`; the turn ends with the `response.failed` that follows (which then adds no second `model/end`), else `turn/end{kind: "error", error}` at the end of the file |
//! | first record of a stream without `response.created` (cut at the front: a proxy's log, a fixture) | `session/start{inferred}`, `turn/start{inferred}` before it; ids from its `response.id` / `response_id`, else the file's path |
//!
//! `function_call_arguments.delta` lines are folded into their `tool/call`; every other
//! record is kept as `openai:<type>`. `seq` numbers the events in stream order (the stream's
//! `sequence_number` is kept as `data.src_seq`); `ts` = `response.created_at` + line ordinal
//! µs with `data.ts_synthetic`. The turn's text is the committed `output_text.done` texts
//! joined (the deltas joined when no part was committed). No receipt or idle, so no intervals.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::{
    error_object, event, flag, id_or, sse_payload, synthetic_ts, token_count, unmapped,
    usage_inclusive, FileContext, Format, Importer, Unmapped,
};
use crate::event::Event;
use crate::import::Payloads;

pub struct OpenaiImporter {
    payloads: Payloads,
    /// The file's relative path: the ids until `response.created` names the response.
    rel: String,
    /// The response id (root = session = turn) once known.
    id: Option<String>,
    /// `created_at` in µs: the start of the synthetic clock.
    start: i64,
    next_seq: u64,
    ordinal: u64,
    /// The native `sequence_number` of the record being read.
    src_seq: Option<u64>,
    /// `function_call_arguments.delta` pieces per item id.
    arguments: HashMap<String, String>,
    /// The lines of those pieces (folded into the item's `tool/call`).
    argument_lines: HashMap<String, Vec<u64>>,
    /// Lines folded into a later event: (line, that event's type).
    folded: Vec<(u64, &'static str)>,
    /// The line being read.
    line_no: u64,
    /// Whether a `function_call` was emitted as `tool/call`.
    tool_pending: bool,
    /// Text deltas joined, and the committed texts (`output_text.done`) joined.
    delta_text: String,
    done_text: String,
    /// The error of an `error` event, until a terminal record ends the turn.
    error: Option<Value>,
    ended: bool,
}

impl OpenaiImporter {
    pub fn new(ctx: &FileContext) -> Self {
        OpenaiImporter {
            payloads: Payloads::of(ctx),
            rel: ctx.rel.clone(),
            id: None,
            start: 0,
            next_seq: 0,
            ordinal: 0,
            src_seq: None,
            arguments: HashMap::new(),
            argument_lines: HashMap::new(),
            folded: Vec::new(),
            line_no: 0,
            tool_pending: false,
            delta_text: String::new(),
            done_text: String::new(),
            error: None,
            ended: false,
        }
    }

    fn push(&mut self, out: &mut Vec<Event>, kind: &str, mut data: Value) {
        flag(&mut data, "ts_synthetic");
        if let (Some(s), Value::Object(m)) = (self.src_seq, &mut data) {
            m.entry("src_seq").or_insert(json!(s));
        }
        let id = self.id.as_deref().unwrap_or(&self.rel);
        out.push(event(
            self.next_seq,
            synthetic_ts(self.start, self.ordinal),
            id,
            id,
            self.id.as_deref(),
            kind,
            self.payloads.data(kind, data),
        ));
        self.next_seq += 1;
    }

    fn keep(&mut self, out: &mut Vec<Event>, raw_type: &str, record: Map<String, Value>) {
        let kind = unmapped(Format::Openai, raw_type);
        self.push(out, &kind, Value::Object(record));
    }

    /// The turn's text: the committed parts, else the deltas.
    fn text(&self) -> &str {
        if self.done_text.is_empty() {
            &self.delta_text
        } else {
            &self.done_text
        }
    }

    /// The start of a stream whose `response.created` is not in the capture: the response
    /// is read all the same, from its first record on (`inferred`, `cut_front`).
    fn implicit_start(&mut self, out: &mut Vec<Event>, record: &Map<String, Value>) {
        let resp = record.get("response");
        let rs = |k: &str| resp.and_then(|r| r.get(k)).and_then(Value::as_str);
        let id = rs("id").or_else(|| record.get("response_id").and_then(Value::as_str));
        self.id = Some(id_or(id, &self.rel));
        if let Some(t) = resp
            .and_then(|r| r.get("created_at"))
            .and_then(Value::as_i64)
        {
            self.start = t.saturating_mul(1_000_000);
        }
        let model = rs("model").map(str::to_string);
        let src_seq = self.src_seq.take();
        self.push(
            out,
            "session/start",
            json!({ "parent": null, "parent_turn": null, "model": model, "inferred": true, "cut_front": true }),
        );
        self.push(out, "turn/start", json!({ "inferred": true }));
        self.src_seq = src_seq;
    }

    fn created(&mut self, out: &mut Vec<Event>, record: &Map<String, Value>) {
        let resp = record.get("response");
        let s = |k: &str| resp.and_then(|r| r.get(k)).and_then(Value::as_str);
        self.id = Some(id_or(s("id"), &self.rel));
        if let Some(t) = resp
            .and_then(|r| r.get("created_at"))
            .and_then(Value::as_i64)
        {
            self.start = t.saturating_mul(1_000_000);
        }
        let model = s("model").map(str::to_string);
        self.push(
            out,
            "session/start",
            json!({ "parent": null, "parent_turn": null, "model": model }),
        );
        self.push(out, "turn/start", json!({}));
    }

    fn item_done(&mut self, out: &mut Vec<Event>, record: Map<String, Value>) {
        let item = record.get("item");
        let s = |k: &str| item.and_then(|i| i.get(k)).and_then(Value::as_str);
        if s("type") != Some("function_call") {
            return self.keep(out, "response.output_item.done", record);
        }
        let joined = s("id").and_then(|id| self.arguments.remove(id));
        if let Some(lines) = s("id").and_then(|id| self.argument_lines.remove(id)) {
            self.folded
                .extend(lines.into_iter().map(|l| (l, "tool/call")));
        }
        let raw = s("arguments").map(str::to_string).or(joined);
        let arguments = match raw {
            Some(a) if a.trim().is_empty() => json!({}),
            Some(a) => serde_json::from_str(&a).unwrap_or(Value::String(a)),
            None => json!({}),
        };
        let call_id = s("call_id").or(s("id")).unwrap_or_default().to_string();
        let name = s("name").unwrap_or_default().to_string();
        self.tool_pending = true;
        self.push(
            out,
            "tool/call",
            json!({ "call_id": call_id, "name": name, "arguments": arguments }),
        );
    }

    /// `response.completed` / `.incomplete` / `.failed`.
    fn terminal(&mut self, out: &mut Vec<Event>, raw_type: &str, record: &Map<String, Value>) {
        let resp = record.get("response");
        let status = resp
            .and_then(|r| r.get("status"))
            .and_then(Value::as_str)
            .unwrap_or(raw_type.trim_start_matches("response."))
            .to_string();
        let resp_error = resp.and_then(|r| r.get("error")).filter(|e| e.is_object());
        let error = resp_error.map(openai_error).or_else(|| self.error.clone());
        let incomplete_reason = resp
            .and_then(|r| r.get("incomplete_details"))
            .and_then(|d| d.get("reason"));
        // An `error` event already recorded this call's failure.
        if self.error.is_none() {
            let mut data = json!({ "finish_reason": status });
            if let Some(u) = resp.and_then(|r| r.get("usage")).filter(|u| u.is_object()) {
                let n = |path: &[&str]| {
                    token_count(path.iter().try_fold(u, |v, k| v.get(*k))).unwrap_or(0)
                };
                data["usage"] = usage_inclusive(
                    n(&["input_tokens"]),
                    n(&["input_tokens_details", "cached_tokens"]),
                    n(&["output_tokens"]),
                    n(&["output_tokens_details", "reasoning_tokens"]),
                );
            }
            if let Some(r) = incomplete_reason {
                data["incomplete_reason"] = r.clone();
            }
            if let Some(e) = &error {
                data["error"] = e.clone();
            }
            self.push(out, "model/end", data);
        }
        if self.ended || (status == "completed" && self.tool_pending) {
            return;
        }
        self.ended = true;
        let mut reason = json!({ "kind": status });
        // Why a response is incomplete (max_output_tokens, content_filter): its finish class.
        if let Some(r) = incomplete_reason.filter(|r| r.is_string()) {
            reason["cause"] = r.clone();
        }
        if let Some(e) = error {
            reason["error"] = e;
        }
        let mut data = json!({ "reason": reason });
        if !self.text().is_empty() {
            data["text"] = json!(self.text());
        }
        self.push(out, "turn/end", data);
    }
}

/// A canonical Error from an OpenAI error object (`{code, message}`, or the `error` event's
/// `{type, code, message}`).
fn openai_error(e: &Value) -> Value {
    let s = |k: &str| e.get(k).and_then(Value::as_str);
    error_object(
        Format::Openai,
        s("code").or(s("type")),
        s("message").unwrap_or(""),
        None,
        None,
    )
}

impl Importer for OpenaiImporter {
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let Some(body) = sse_payload(line) else {
            return Ok(()); // SSE framing: no record
        };
        let record = Unmapped::parse(body)?;
        self.ordinal = line_no.saturating_sub(1);
        self.line_no = line_no;
        self.src_seq = record.get("sequence_number").and_then(Value::as_u64);
        let raw_type = record
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("record")
            .to_string();
        if self.id.is_none() && raw_type != "response.created" {
            self.implicit_start(out, &record);
        }
        let s = |k: &str| record.get(k).and_then(Value::as_str);
        match raw_type.as_str() {
            "response.created" if self.id.is_none() => self.created(out, &record),
            "response.output_text.delta" => {
                let t = s("delta").unwrap_or_default().to_string();
                self.delta_text.push_str(&t);
                self.push(out, "text/delta", json!({ "text": t }));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let t = s("delta").unwrap_or_default().to_string();
                self.push(out, "reasoning/delta", json!({ "text": t }));
            }
            "response.output_text.done" => {
                if let Some(t) = s("text") {
                    self.done_text.push_str(t);
                }
                self.keep(out, &raw_type, record);
            }
            "response.function_call_arguments.delta" => match (s("item_id"), s("delta")) {
                (Some(item), Some(d)) => {
                    let d = d.to_string();
                    self.arguments
                        .entry(item.to_string())
                        .or_default()
                        .push_str(&d);
                    self.argument_lines
                        .entry(item.to_string())
                        .or_default()
                        .push(self.line_no);
                }
                _ => self.keep(out, &raw_type, record),
            },
            "response.output_item.done" => self.item_done(out, record),
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.terminal(out, &raw_type, &record);
            }
            "error" => {
                let e = match record.get("error") {
                    Some(e) if e.is_object() => openai_error(e),
                    _ => openai_error(&Value::Object(record.clone())),
                };
                self.push(out, "model/end", json!({ "error": e }));
                self.error.get_or_insert(e);
            }
            _ => self.keep(out, &raw_type, record),
        }
        Ok(())
    }

    fn folded(&mut self) -> Vec<(u64, &'static str)> {
        std::mem::take(&mut self.folded)
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        // Arguments of a call whose item never completed (the stream was cut): a partial
        // `tool/call`, so that their lines are not lost; the turn stays open.
        let mut cut: Vec<String> = self.arguments.keys().cloned().collect();
        cut.sort();
        for item in cut {
            let raw = self.arguments.remove(&item).unwrap_or_default();
            let arguments = serde_json::from_str(&raw).unwrap_or(Value::String(raw));
            let data =
                json!({ "call_id": item, "name": null, "arguments": arguments, "partial": true });
            self.push(out, "tool/call", data);
            if let Some(lines) = self.argument_lines.remove(&item) {
                self.folded
                    .extend(lines.into_iter().map(|l| (l, "tool/call")));
            }
        }
        // An error the stream never followed with `response.failed` ends the turn.
        if let (Some(e), false) = (self.error.clone(), self.ended) {
            self.ended = true;
            self.src_seq = None;
            self.push(
                out,
                "turn/end",
                json!({ "reason": { "kind": "error", "error": e } }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    fn run(lines: &[&str]) -> Vec<Event> {
        let (evs, rejected) = feed(&mut OpenaiImporter::new(&context("o.jsonl")), lines);
        assert!(rejected.is_empty(), "lines rejected: {rejected:?}");
        evs
    }

    #[test]
    fn error_without_failed_ends_the_turn_at_eof() {
        let evs = run(&[
            "event: response.created",
            r#"data: {"type":"response.created","sequence_number":0,"response":{"id":"r1","created_at":10}}"#,
            r#"data: {"type":"error","sequence_number":1,"code":"rate_limit_exceeded","message":"slow"}"#,
            "data: [DONE]",
        ]);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["session/start", "turn/start", "model/end", "turn/end"]
        );
        assert_eq!(evs[0].ts, 10_000_001);
        let end: Value = serde_json::from_str(&evs[3].data).unwrap();
        assert_eq!(end["reason"]["error"]["code"], "completion_rate_limited");
    }

    #[test]
    fn incomplete_ends_the_turn_with_its_status() {
        let evs = run(&[
            r#"{"type":"response.created","response":{"id":"r1"}}"#,
            r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            r#"{"type":"response.incomplete","response":{"id":"r1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":2}}}"#,
        ]);
        let end: Value = serde_json::from_str(&evs[4].data).unwrap();
        assert_eq!(evs[4].kind, "turn/end");
        assert_eq!(end["reason"]["kind"], "incomplete");
        assert_eq!(end["reason"]["cause"], "max_output_tokens");
        assert_eq!(end["text"], "Hi");
        let model: Value = serde_json::from_str(&evs[3].data).unwrap();
        assert_eq!(model["usage"]["total_tokens"], 5);
        assert_eq!(model["incomplete_reason"], "max_output_tokens");
    }

    #[test]
    fn a_stream_cut_at_the_front_is_read_as_one_response() {
        // The vercel/ai `openai-error.1` fixture without its `response.created` line.
        let sample = include_str!(
            "../../../../tests/samples/vercel-ai/openai-responses-cut/openai-error.1.from-line-2.chunks.jsonl"
        );
        let lines: Vec<&str> = sample.lines().filter(|l| !l.trim().is_empty()).collect();
        let evs = run(&lines);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "session/start",
                "turn/start",
                "openai:response.in_progress",
                "model/end",
                "turn/end"
            ]
        );
        let id = "resp_05500b38c2cd9bfc00691c7c9d222481a3b595421266dab424";
        assert!(evs.iter().all(|e| e.root == id && e.session == id));
        assert_eq!(evs[1].turn.as_deref(), Some(id));
        let start: Value = serde_json::from_str(&evs[0].data).unwrap();
        assert_eq!(start["inferred"], true);
        assert!(start.get("src_seq").is_none());
        let end: Value = serde_json::from_str(&evs[4].data).unwrap();
        assert_eq!(end["reason"]["kind"], "failed");
        assert_eq!(end["reason"]["error"]["code"], "completion_billing_denied");
    }

    #[test]
    fn phase_sample_usage_is_inclusive() {
        let sample = include_str!(
            "../../../../tests/samples/vercel-ai/openai-responses/openai-phase.1.chunks.jsonl"
        );
        let lines: Vec<&str> = sample.lines().filter(|l| !l.trim().is_empty()).collect();
        let evs = run(&lines);
        let model = evs.iter().find(|e| e.kind == "model/end").unwrap();
        let d: Value = serde_json::from_str(&model.data).unwrap();
        assert_eq!(d["usage"]["input_tokens"], 7112);
        assert_eq!(d["usage"]["cached_input_tokens"], 3072);
        assert_eq!(d["usage"]["output_tokens"], 463);
        assert_eq!(d["usage"]["reasoning_tokens"], 64);
        assert_eq!(d["usage"]["total_tokens"], 7575);
        assert_eq!(d["src_seq"], 129);
    }
}
