//! Anthropic Messages SSE chunks (docs/importers/anthropic.md): one stream event per line,
//! bare JSON or SSE-framed (`event:` lines skipped, `data:` stripped). One stream is one model
//! call, so the message id is root, session and turn at once.
//!
//! | record | canonical |
//! |---|---|
//! | `message_start` | `session/start{parent: null, model}`, `turn/start` |
//! | `content_block_delta` `text_delta` / `thinking_delta` | `text/delta` / `reasoning/delta` |
//! | `tool_use` block (its `input_json_delta` pieces joined) at `content_block_stop` | `tool/call` |
//! | `message_delta{stop_reason, usage}` | `model/end{finish_reason, usage}` (disjoint usage, the last counts win) |
//! | `message_stop` | `turn/end{kind: stop_reason, text}`; none after `tool_use` (the turn waits for its tools) |
//! | `error{error.type}` | `model/end{error}` + `turn/end{kind: "error", error}` |
//!
//! Everything else (`ping`, text block starts/stops, signature deltas…) is kept as
//! `anthropic:<type>`; `input_json_delta` lines are folded into their `tool/call`. The stream
//! records no time: every event has `ts` = epoch + line ordinal µs and `data.ts_synthetic`.
//! `seq` numbers the events in stream order. No receipt or idle, so no intervals.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{
    error_object, event, flag, sse_payload, synthetic_ts, token_count, unmapped, usage_disjoint,
    FileContext, Format, Importer, Unmapped,
};
use crate::event::Event;
use crate::import::Payloads;

/// A content block being streamed.
enum Block {
    Text,
    Thinking,
    /// A `tool_use` block: its id, name, the input of `content_block_start` and the joined
    /// `partial_json` pieces.
    Tool {
        id: String,
        name: String,
        input: Value,
        json: String,
        /// The lines folded into its `tool/call`: its start and its `input_json_delta`s.
        lines: Vec<u64>,
    },
    Other,
}

/// Token counts as the stream reports them (disjoint: input excludes the cache).
#[derive(Default)]
struct Counts {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
}

impl Counts {
    /// Takes every count the record names (a later record's counts replace earlier ones).
    fn update(&mut self, usage: Option<&Value>) {
        let Some(u) = usage else { return };
        let n = |k: &str| token_count(u.get(k));
        if let Some(v) = n("input_tokens") {
            self.input = v;
        }
        if let Some(v) = n("cache_read_input_tokens") {
            self.cache_read = v;
        }
        if let Some(v) = n("cache_creation_input_tokens") {
            self.cache_write = v;
        }
        if let Some(v) = n("output_tokens") {
            self.output = v;
        }
    }
}

pub struct AnthropicImporter {
    payloads: Payloads,
    /// The file's relative path: the ids until `message_start` names the message.
    rel: String,
    /// The message id (root = session = turn) once `message_start` was read.
    id: Option<String>,
    next_seq: u64,
    /// The ordinal of the current line (its synthetic time offset).
    ordinal: u64,
    blocks: BTreeMap<u64, Block>,
    counts: Counts,
    stop_reason: Option<String>,
    /// Text deltas joined: the turn's text.
    text: String,
    /// Whether the turn was ended (by `message_stop` or `error`).
    ended: bool,
    /// The line being read.
    line_no: u64,
    /// Lines folded into a later event: (line, that event's type).
    folded: Vec<(u64, &'static str)>,
}

impl AnthropicImporter {
    pub fn new(ctx: &FileContext) -> Self {
        AnthropicImporter {
            payloads: Payloads::of(ctx),
            rel: ctx.rel.clone(),
            id: None,
            next_seq: 0,
            ordinal: 0,
            blocks: BTreeMap::new(),
            counts: Counts::default(),
            stop_reason: None,
            text: String::new(),
            ended: false,
            line_no: 0,
            folded: Vec::new(),
        }
    }

    /// The `tool/call` of a `tool_use` block: its input (the joined pieces parsed, else
    /// kept as text); `partial` when the block never stopped (cut off by `max_tokens`, or
    /// the stream ended), so that its lines are not lost. Its lines are folded into it.
    fn tool_call(&mut self, out: &mut Vec<Event>, block: Block, partial: bool) {
        let Block::Tool {
            id,
            name,
            input,
            json,
            lines,
        } = block
        else {
            return;
        };
        let arguments = if json.trim().is_empty() {
            input
        } else {
            serde_json::from_str(&json).unwrap_or(Value::String(json))
        };
        let mut data = json!({ "call_id": id, "name": name, "arguments": arguments });
        if partial {
            flag(&mut data, "partial");
        }
        self.push(out, "tool/call", data);
        let at = out.last().map_or(0, |e| e.line);
        self.folded.extend(
            lines
                .into_iter()
                .filter(|&l| l != self.line_no && l != at)
                .map(|l| (l, "tool/call")),
        );
    }

    /// Tool blocks still open when the message ends: their partial calls.
    fn flush_tools(&mut self, out: &mut Vec<Event>) {
        let open: Vec<u64> = self
            .blocks
            .iter()
            .filter(|(_, b)| matches!(b, Block::Tool { .. }))
            .map(|(&i, _)| i)
            .collect();
        for i in open {
            if let Some(b) = self.blocks.remove(&i) {
                self.tool_call(out, b, true);
            }
        }
    }

    /// Pushes one event of the message (its turn once the message is known).
    fn push(&mut self, out: &mut Vec<Event>, kind: &str, mut data: Value) {
        flag(&mut data, "ts_synthetic");
        let id = self.id.as_deref().unwrap_or(&self.rel);
        let turn = self.id.as_deref();
        out.push(event(
            self.next_seq,
            synthetic_ts(0, self.ordinal),
            id,
            id,
            turn,
            kind,
            self.payloads.data(kind, data),
        ));
        self.next_seq += 1;
    }

    fn keep(&mut self, out: &mut Vec<Event>, raw_type: &str, record: Map<String, Value>) {
        let kind = unmapped(Format::Anthropic, raw_type);
        self.push(out, &kind, Value::Object(record));
    }

    fn usage(&self) -> Value {
        let c = &self.counts;
        usage_disjoint(c.input, c.cache_read, c.cache_write, c.output)
    }

    fn block_delta(&mut self, out: &mut Vec<Event>, record: Map<String, Value>) {
        let index = record.get("index").and_then(Value::as_u64).unwrap_or(0);
        let delta = record.get("delta");
        let dtype = delta.and_then(|d| d.get("type")).and_then(Value::as_str);
        let field = |k: &str| delta.and_then(|d| d.get(k)).and_then(Value::as_str);
        match (
            dtype,
            field("text"),
            field("thinking"),
            field("partial_json"),
        ) {
            (Some("text_delta"), Some(t), _, _) => {
                self.text.push_str(t);
                self.push(out, "text/delta", json!({ "text": t }));
            }
            (Some("thinking_delta"), _, Some(t), _) => {
                self.push(out, "reasoning/delta", json!({ "text": t }));
            }
            (Some("input_json_delta"), _, _, Some(piece)) => match self.blocks.get_mut(&index) {
                Some(Block::Tool { json, lines, .. }) => {
                    json.push_str(piece);
                    lines.push(self.line_no);
                }
                _ => self.keep(out, "content_block_delta", record),
            },
            _ => self.keep(out, "content_block_delta", record),
        }
    }

    fn block_stop(&mut self, out: &mut Vec<Event>, record: Map<String, Value>) {
        let index = record.get("index").and_then(Value::as_u64).unwrap_or(0);
        match self.blocks.remove(&index) {
            Some(b @ Block::Tool { .. }) => self.tool_call(out, b, false),
            _ => self.keep(out, "content_block_stop", record),
        }
    }

    fn error(&mut self, out: &mut Vec<Event>, record: &Map<String, Value>) {
        let e = record.get("error");
        let s = |k: &str| e.and_then(|e| e.get(k)).and_then(Value::as_str);
        let err = error_object(
            Format::Anthropic,
            s("type"),
            s("message").unwrap_or(""),
            None,
            None,
        );
        self.push(out, "model/end", json!({ "error": err }));
        if !self.ended {
            self.ended = true;
            self.push(
                out,
                "turn/end",
                json!({ "reason": { "kind": "error", "error": err } }),
            );
        }
    }
}

impl Importer for AnthropicImporter {
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let Some(body) = sse_payload(line) else {
            return Ok(()); // SSE framing: no record
        };
        let record = Unmapped::parse(body)?;
        self.ordinal = line_no.saturating_sub(1);
        self.line_no = line_no;
        let raw_type = record
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("record")
            .to_string();
        match raw_type.as_str() {
            "message_start" if self.id.is_none() => {
                let msg = record.get("message");
                let s = |k: &str| msg.and_then(|m| m.get(k)).and_then(Value::as_str);
                self.id = Some(super::id_or(s("id"), &self.rel));
                self.counts.update(msg.and_then(|m| m.get("usage")));
                let model = s("model").map(str::to_string);
                self.push(
                    out,
                    "session/start",
                    json!({ "parent": null, "parent_turn": null, "model": model }),
                );
                self.push(out, "turn/start", json!({}));
            }
            "content_block_start" => {
                let index = record.get("index").and_then(Value::as_u64).unwrap_or(0);
                let cb = record.get("content_block");
                let s = |k: &str| cb.and_then(|b| b.get(k)).and_then(Value::as_str);
                let block = match s("type") {
                    Some("text") => Block::Text,
                    Some("thinking") => Block::Thinking,
                    Some("tool_use") => Block::Tool {
                        id: s("id").unwrap_or_default().to_string(),
                        name: s("name").unwrap_or_default().to_string(),
                        input: cb
                            .and_then(|b| b.get("input"))
                            .cloned()
                            .unwrap_or_else(|| json!({})),
                        json: String::new(),
                        lines: vec![line_no],
                    },
                    _ => Block::Other,
                };
                let is_tool = matches!(block, Block::Tool { .. });
                self.blocks.insert(index, block);
                if !is_tool {
                    self.keep(out, &raw_type, record);
                }
                // A tool_use start is folded into its tool/call.
            }
            "content_block_delta" => self.block_delta(out, record),
            "content_block_stop" => self.block_stop(out, record),
            "message_delta" => {
                self.flush_tools(out);
                self.counts.update(record.get("usage"));
                let delta = record.get("delta");
                if let Some(r) = delta
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(r.to_string());
                }
                let mut data = json!({ "usage": self.usage() });
                if let Some(r) = &self.stop_reason {
                    data["finish_reason"] = json!(r);
                }
                if let Some(d) = delta.and_then(|d| d.get("stop_details")) {
                    data["stop_details"] = d.clone();
                }
                self.push(out, "model/end", data);
            }
            "message_stop" => match self.stop_reason.clone() {
                // Tools pending: the turn goes on with their results (another stream).
                Some(r) if r != "tool_use" && !self.ended => {
                    self.ended = true;
                    let mut data = json!({ "reason": { "kind": r } });
                    if !self.text.is_empty() {
                        data["text"] = json!(self.text);
                    }
                    self.push(out, "turn/end", data);
                }
                _ => self.keep(out, &raw_type, record),
            },
            "error" => self.error(out, &record),
            _ => self.keep(out, &raw_type, record),
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.flush_tools(out);
    }

    fn folded(&mut self) -> Vec<(u64, &'static str)> {
        std::mem::take(&mut self.folded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    fn run(lines: &[&str]) -> Vec<Event> {
        let (evs, rejected) = feed(&mut AnthropicImporter::new(&context("a.jsonl")), lines);
        assert!(rejected.is_empty(), "lines rejected: {rejected:?}");
        evs
    }

    #[test]
    fn sse_framing_and_error_event() {
        let evs = run(&[
            "event: message_start",
            r#"data: {"type":"message_start","message":{"id":"m1","usage":{"input_tokens":5}}}"#,
            "",
            "event: error",
            r#"data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ]);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["session/start", "turn/start", "model/end", "turn/end"]
        );
        assert!(evs
            .iter()
            .all(|e| e.root == "m1" && e.turn.as_deref() == Some("m1")));
        let end: Value = serde_json::from_str(&evs[3].data).unwrap();
        assert_eq!(end["reason"]["kind"], "error");
        assert_eq!(end["reason"]["error"]["code"], "completion_unavailable");
        assert_eq!(
            end["reason"]["error"]["details"]["raw_code"],
            "overloaded_error"
        );
    }

    #[test]
    fn invalid_tool_json_is_kept_as_a_string() {
        let evs = run(&[
            r#"{"type":"message_start","message":{"id":"m1"}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ]);
        let call: Value = serde_json::from_str(&evs[2].data).unwrap();
        assert_eq!(evs[2].kind, "tool/call");
        assert_eq!(call["arguments"], "{\"a\":");
    }

    #[test]
    fn usage_is_disjoint_and_the_last_counts_win() {
        let evs = run(&[
            r#"{"type":"message_start","message":{"id":"m1","usage":{"input_tokens":43,"cache_read_input_tokens":100,"cache_creation_input_tokens":7,"output_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":61,"output_tokens":2}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        let d: Value = serde_json::from_str(&evs[2].data).unwrap();
        assert_eq!(evs[2].kind, "model/end");
        assert_eq!(d["usage"]["input_tokens"], 61 + 100 + 7);
        assert_eq!(d["usage"]["cached_input_tokens"], 100);
        assert_eq!(d["usage"]["cache_write_tokens"], 7);
        assert_eq!(d["usage"]["output_tokens"], 2);
        assert_eq!(d["finish_reason"], "end_turn");
        assert_eq!(evs[3].kind, "turn/end");
    }
}
