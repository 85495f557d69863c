//! The Codex CLI importer (docs/importers/codex.md): reads rollout files
//! (`~/.codex/sessions/**/rollout-*.jsonl`, one `{"timestamp","type","payload"}` record per
//! line, first line `session_meta`) and maps them to canonical events.
//!
//! - root = session = `session_meta.payload.id` (the file's relative path when missing or a
//!   placeholder); turn = `task_started.turn_id`; seq = the order of the events this file
//!   yields; ts = `timestamp` (missing: file start + line µs, `ts_synthetic`).
//! - `task_started` → `turn/start`; `user_message` → **open** `inbox/receipt{message_id:
//!   "<file>:<line>", kind}` (`steer` inside an open turn). Codex writes a turn's
//!   `task_started` *before* the `user_message` that caused it, so the `turn/start` is held
//!   back until that message (or any other turn event) arrives: the receipt comes first and
//!   the turn belongs to the interval it opens.
//! - `agent_message` / `agent_reasoning` → `text/delta` / `reasoning/delta` (committed text;
//!   Codex records no deltas).
//! - `response_item` `function_call`, `custom_tool_call`, other `*_call` → `tool/call`
//!   (`arguments` parsed when it is JSON text); `*_call_output` → `tool/result{ok}`. A `*_call`
//!   without `call_id` (`web_search_call`) gets `<file>:<line>` as id and, when its `status`
//!   is `completed`, its own `tool/result{ok}` (no output record follows it).
//! - `token_count` whose `info.total_token_usage` differs from the previous one →
//!   `model/end{usage}` from `last_token_usage` (inclusive counts, OpenAI style); repeated
//!   snapshots are kept unmapped.
//! - `error{codex_error_info}` / `stream_error` → `model/end{error}` (table E, HTTP status
//!   from `*.http_status_code`; `stream_error` is retryable).
//! - `task_complete` / `turn_aborted{reason}` → `turn/end{kind: "task_complete" | reason,
//!   text: last_agent_message, error: the error that ended the turn}` + synthetic
//!   `agent/idle` (none after `replaced`, none while another turn is still open).
//! - A turn with no terminal record stays open (e.g. one superseded by a later
//!   `task_started`): nothing is invented for it.
//! - Everything else (`session_meta`, `turn_context`, `compacted`, `response_item/message`,
//!   repeated `token_count`, ...) is kept as `codex:<type>` / `codex:event_msg/<type>` /
//!   `codex:response_item/<type>` with the whole record as data, without a turn.

use serde_json::{json, Map, Value};

use super::codex_legacy;
use super::{
    error_object, event, flag, id_or, is_placeholder, parse_rfc3339, synthetic_ts, usage_inclusive,
    FileContext, Format, Importer, Unmapped,
};
use crate::event::Event;
use crate::import::Payloads;

/// Token counts above this are taken as this (2^53, the largest exact JSON integer).
const MAX_TOKENS: u64 = 1 << 53;

/// A `task_started` whose `turn/start` waits for the turn's `user_message`.
struct PendingStart {
    turn: String,
    ts: i64,
    line: u64,
    ts_synthetic: bool,
}

pub struct CodexImporter {
    payloads: Payloads,
    rel: String,
    /// `session_meta.payload.id`, once seen.
    session: Option<String>,
    /// File start for synthetic timestamps (`session_meta.payload.timestamp`, else epoch).
    file_start: i64,
    next_seq: u64,
    open_turn: Option<String>,
    pending: Option<PendingStart>,
    /// The current record's time, and whether it is synthetic.
    ts: i64,
    ts_syn: bool,
    /// The last `total_token_usage` seen (a changed one is a new model call).
    prev_total: Option<Value>,
    /// An `error` of the open turn not followed by a successful model call.
    turn_error: Option<Value>,
    /// The open turn was started by a `user_message` with no `task_started` (0.4x–0.9x
    /// rollouts record none): its end is inferred too.
    inferred_turn: bool,
    /// Tool calls of the open turn with no output yet.
    pending_calls: std::collections::HashSet<String>,
    /// The open turn's last output is an assistant message with no tool call pending.
    finished: bool,
    /// The open turn's last assistant message (the inferred end's text).
    last_text: Option<String>,
    /// The `turn/end` being written is inferred.
    ending_inferred: bool,
    /// The file is an older rollout (session header, bare response items).
    legacy: bool,
    /// Older rollouts: the `(ts, line, ts_synthetic)` of the last output item of the model call in
    /// progress (reasoning, assistant message, `*_call`), ended by the next input item.
    call_open: Option<(i64, u64, bool)>,
}

impl CodexImporter {
    pub fn new(ctx: &FileContext) -> Self {
        CodexImporter {
            payloads: Payloads::of(ctx),
            rel: ctx.rel.clone(),
            session: None,
            file_start: 0,
            next_seq: 0,
            open_turn: None,
            pending: None,
            ts: 0,
            ts_syn: false,
            prev_total: None,
            turn_error: None,
            inferred_turn: false,
            pending_calls: Default::default(),
            finished: false,
            last_text: None,
            ending_inferred: false,
            legacy: false,
            call_open: None,
        }
    }

    /// Ends an inferred turn whose assistant has finished (its last output a message, no
    /// tool call pending): `turn/end{kind: end_turn, inferred}` + idle. A turn cut off
    /// mid-work stays open.
    fn settle(&mut self, out: &mut Vec<Event>) {
        if !self.inferred_turn || self.open_turn.is_none() {
            return;
        }
        if !self.finished || !self.pending_calls.is_empty() {
            return;
        }
        let mut reason = Map::new();
        reason.insert("kind".into(), Value::String("end_turn".into()));
        let text = self.last_text.take();
        self.ending_inferred = true;
        self.end_turn(out, None, reason, text.as_deref(), true);
    }

    /// A new prompt in an inferred turn whose assistant had not finished (older Codex had
    /// no steering: input typed while it worked became the next task): the user stopped it,
    /// `turn/end{kind: interrupted, cause: user, inferred}`.
    fn cut_off(&mut self, out: &mut Vec<Event>) {
        if !self.inferred_turn || self.open_turn.is_none() {
            return;
        }
        let mut reason = Map::new();
        reason.insert("kind".into(), Value::String("interrupted".into()));
        reason.insert("cause".into(), Value::String("user".into()));
        self.ending_inferred = true;
        self.end_turn(out, None, reason, None, true);
    }

    fn push(
        &mut self,
        out: &mut Vec<Event>,
        ts: i64,
        turn: Option<&str>,
        kind: &str,
        data: Value,
        line: u64,
    ) {
        let session = self.session.as_deref().unwrap_or(&self.rel);
        let data = self.payloads.data(kind, data);
        let mut ev = event(self.next_seq, ts, session, session, turn, kind, data);
        ev.line = line;
        self.next_seq += 1;
        out.push(ev);
    }

    /// Emits the held `turn/start`, if any: its turn becomes the open turn.
    fn flush_start(&mut self, out: &mut Vec<Event>) {
        if let Some(p) = self.pending.take() {
            let mut data = json!({});
            if p.ts_synthetic {
                flag(&mut data, "ts_synthetic");
            }
            self.push(out, p.ts, Some(&p.turn), "turn/start", data, p.line);
            self.open_turn = Some(p.turn);
            self.turn_error = None;
        }
    }

    /// A turn-scoped event in the open turn (the held start is emitted first).
    fn push_turn(&mut self, out: &mut Vec<Event>, ts: i64, kind: &str, data: Value) {
        self.flush_start(out);
        let turn = self.open_turn.clone();
        self.push(out, ts, turn.as_deref(), kind, data, 0);
    }

    fn unmapped(
        &mut self,
        out: &mut Vec<Event>,
        ts: i64,
        ts_syn: bool,
        raw_type: &str,
        record: Map<String, Value>,
    ) {
        let mut data = Value::Object(record);
        if ts_syn {
            flag(&mut data, "ts_synthetic");
        }
        let kind = super::unmapped(Format::Codex, raw_type);
        self.push(out, ts, None, &kind, data, 0);
    }

    /// `turn/end` of `turn` + the synthetic idle that closes the interval.
    fn end_turn(
        &mut self,
        out: &mut Vec<Event>,
        turn: Option<String>,
        mut reason: Map<String, Value>,
        text: Option<&str>,
        idle: bool,
    ) {
        let (ts, synthetic_ts) = (self.ts, self.ts_syn);
        self.flush_start(out);
        let turn = turn.or_else(|| self.open_turn.clone());
        if let Some(e) = self.turn_error.take() {
            if turn == self.open_turn {
                reason.insert("error".into(), e);
            } else {
                self.turn_error = Some(e);
            }
        }
        let mut data = json!({ "reason": reason });
        if let Some(t) = text {
            data["text"] = Value::String(t.to_string());
        }
        if synthetic_ts {
            flag(&mut data, "ts_synthetic");
        }
        let inferred = std::mem::take(&mut self.ending_inferred);
        if inferred {
            flag(&mut data, "inferred");
        }
        self.push(out, ts, turn.as_deref(), "turn/end", data, 0);
        if turn.is_some() && turn == self.open_turn {
            self.open_turn = None;
            self.inferred_turn = false;
            self.pending_calls.clear();
            self.finished = false;
            self.last_text = None;
        }
        // Another turn still running: the agent is not idle.
        if idle && self.open_turn.is_none() {
            let mut data = json!({});
            flag(&mut data, "synthetic");
            if inferred {
                flag(&mut data, "inferred");
            }
            if synthetic_ts {
                flag(&mut data, "ts_synthetic");
            }
            self.push(out, ts, None, "agent/idle", data, 0);
        }
    }

    /// A `user_message`: a prompt, or a steer while the turn runs. Without a
    /// `task_started` before it (older rollouts), a new prompt after the assistant finished
    /// ends the turn before it and opens an inferred one.
    fn user_message(&mut self, out: &mut Vec<Event>, line_no: u64, ts: i64, ts_syn: bool) {
        let with_ts = |mut d: Value| {
            if ts_syn {
                flag(&mut d, "ts_synthetic");
            }
            d
        };
        if self.pending.is_none() {
            self.settle(out);
            self.cut_off(out);
        }
        if self.pending.is_none() && self.open_turn.is_none() {
            let turn = format!("{}:{}", self.rel, line_no);
            let data = with_ts(json!({ "message_id": turn, "kind": "prompt" }));
            self.push(out, ts, None, "inbox/receipt", data, 0);
            let data = with_ts(json!({ "inferred": true }));
            self.push(out, ts, Some(&turn), "turn/start", data, 0);
            self.open_turn = Some(turn);
            self.inferred_turn = true;
            self.turn_error = None;
            self.finished = false;
            return;
        }
        let kind = if self.pending.is_none() && self.open_turn.is_some() {
            "steer"
        } else {
            "prompt"
        };
        let data = with_ts(json!({
            "message_id": format!("{}:{}", self.rel, line_no),
            "kind": kind,
        }));
        self.push(out, ts, None, "inbox/receipt", data, 0);
        self.flush_start(out);
    }

    /// The usage of the model call a `token_count` reports (its `last_token_usage`, else
    /// the total), or `None` when it repeats the previous total or has none.
    fn call_usage(&mut self, payload: Option<&Map<String, Value>>) -> Option<Value> {
        let info = payload
            .and_then(|p| p.get("info"))
            .and_then(Value::as_object);
        let t = info
            .and_then(|i| i.get("total_token_usage"))
            .filter(|t| t.is_object() && self.prev_total.as_ref() != Some(*t))?;
        self.prev_total = Some(t.clone());
        let last = info
            .and_then(|i| i.get("last_token_usage"))
            .filter(|l| l.is_object())
            .unwrap_or(t);
        // Capped so that sums of absurd counts cannot overflow.
        let n = |k: &str| {
            last.get(k)
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(MAX_TOKENS)
        };
        Some(usage_inclusive(
            n("input_tokens"),
            n("cached_input_tokens"),
            n("output_tokens"),
            n("reasoning_output_tokens"),
        ))
    }

    fn event_msg(
        &mut self,
        out: &mut Vec<Event>,
        line_no: u64,
        ts: i64,
        ts_syn: bool,
        record: Map<String, Value>,
    ) {
        let payload = record.get("payload").and_then(Value::as_object);
        let ptype = payload
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let pstr = |k: &str| payload.and_then(|p| p.get(k)).and_then(Value::as_str);
        let with_ts = |mut d: Value| {
            if ts_syn {
                flag(&mut d, "ts_synthetic");
            }
            d
        };
        match ptype {
            "task_started" => {
                self.flush_start(out);
                let turn = match pstr("turn_id") {
                    Some(t) if !is_placeholder(Some(t)) => t.to_string(),
                    _ => format!("{}:{}", self.rel, line_no),
                };
                self.pending = Some(PendingStart {
                    turn,
                    ts,
                    line: line_no,
                    ts_synthetic: ts_syn,
                });
                // The line's event is emitted later; it still counts as kept.
            }
            "user_message" => self.user_message(out, line_no, ts, ts_syn),
            "agent_message" | "agent_reasoning" => {
                let kind = if ptype == "agent_message" {
                    "text/delta"
                } else {
                    "reasoning/delta"
                };
                let text = pstr("message").or_else(|| pstr("text")).unwrap_or("");
                let data = with_ts(json!({ "text": text }));
                self.push_turn(out, ts, kind, data);
                if ptype == "agent_message" && pstr("phase") != Some("commentary") {
                    self.finished = self.pending_calls.is_empty();
                    self.last_text = Some(text.to_string());
                }
            }
            "token_count" => match self.call_usage(payload) {
                Some(usage) => {
                    let data = with_ts(json!({ "usage": usage }));
                    self.push_turn(out, ts, "model/end", data);
                    // A successful call: an earlier error did not end the turn.
                    self.turn_error = None;
                }
                None => self.unmapped(out, ts, ts_syn, "event_msg/token_count", record),
            },
            "error" | "stream_error" => {
                let (raw, http) = codex_error_info(payload.and_then(|p| p.get("codex_error_info")));
                let retryable = ptype == "stream_error";
                let err = error_object(
                    Format::Codex,
                    raw.as_deref(),
                    pstr("message").unwrap_or(""),
                    Some(retryable),
                    http,
                );
                let data = with_ts(json!({ "error": err }));
                self.push_turn(out, ts, "model/end", data);
                if !retryable {
                    self.turn_error = Some(err);
                }
            }
            "task_complete" => {
                let turn = pstr("turn_id")
                    .filter(|t| !is_placeholder(Some(t)))
                    .map(str::to_string);
                let mut reason = Map::new();
                reason.insert("kind".into(), Value::String("task_complete".into()));
                let text = pstr("last_agent_message");
                self.end_turn(out, turn, reason, text, true);
            }
            "turn_aborted" => {
                let turn = pstr("turn_id")
                    .filter(|t| !is_placeholder(Some(t)))
                    .map(str::to_string);
                let kind = pstr("reason").unwrap_or("aborted").to_string();
                let idle = kind != "replaced";
                let mut reason = Map::new();
                reason.insert("kind".into(), Value::String(kind));
                self.end_turn(out, turn, reason, None, idle);
            }
            _ => {
                let raw = format!("event_msg/{ptype}");
                self.unmapped(out, ts, ts_syn, &raw, record);
            }
        }
    }

    fn response_item(
        &mut self,
        out: &mut Vec<Event>,
        line_no: u64,
        ts: i64,
        ts_syn: bool,
        record: Map<String, Value>,
    ) {
        let payload = record
            .get("payload")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        self.item(
            out,
            (line_no, ts, ts_syn),
            &payload,
            record,
            "response_item/",
        );
    }

    /// A response item (`payload` of a `response_item`, or a bare line of an older
    /// rollout): tool calls and results are mapped, the rest kept as `codex:<prefix><type>`
    /// with `record` as data.
    fn item(
        &mut self,
        out: &mut Vec<Event>,
        (line_no, ts, ts_syn): (u64, i64, bool),
        payload: &Map<String, Value>,
        record: Map<String, Value>,
        prefix: &str,
    ) {
        let ptype = payload.get("type").and_then(Value::as_str).unwrap_or("");
        let get = |k: &str| payload.get(k);
        let call_id = get("call_id")
            .and_then(Value::as_str)
            .filter(|c| !is_placeholder(Some(c)))
            .map(str::to_string);
        // `*_call_output`, and outputs named otherwise (`tool_search_output`) with a call id.
        if ptype.ends_with("_call_output") || (ptype.ends_with("_output") && call_id.is_some()) {
            let id = call_id.unwrap_or_else(|| format!("{}:{}", self.rel, line_no));
            self.pending_calls.remove(&id);
            self.finished = false;
            let mut data = json!({ "call_id": id, "status": "ok" });
            if self.legacy {
                if let Some(code) = codex_legacy::failed_exit_code(payload) {
                    data["status"] = json!("error");
                    data["detail"] = json!(format!("exit_code {code}"));
                }
            }
            if ts_syn {
                flag(&mut data, "ts_synthetic");
            }
            self.push_turn(out, ts, "tool/result", data);
        } else if ptype.ends_with("_call") {
            let name = get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| ptype.trim_end_matches("_call").to_string());
            let arguments = match get("arguments").or_else(|| get("input")) {
                // Function arguments are JSON text; free-form input stays a string.
                Some(Value::String(s)) if ptype == "function_call" => {
                    serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(v) => v.clone(),
                None => get("action").cloned().unwrap_or(Value::Null),
            };
            let self_contained = call_id.is_none();
            let id = call_id.unwrap_or_else(|| format!("{}:{}", self.rel, line_no));
            self.finished = false;
            if !self_contained {
                self.pending_calls.insert(id.clone());
            }
            let mut data = json!({ "call_id": id, "name": name, "arguments": arguments });
            if ts_syn {
                flag(&mut data, "ts_synthetic");
            }
            self.push_turn(out, ts, "tool/call", data);
            if self_contained && get("status").and_then(Value::as_str) == Some("completed") {
                let mut data = json!({ "call_id": id, "status": "ok" });
                if ts_syn {
                    flag(&mut data, "ts_synthetic");
                }
                self.push_turn(out, ts, "tool/result", data);
            }
        } else {
            // The assistant's own message is its output too: trimmed rollouts keep it without
            // the `agent_message` event. A `commentary` message announces more work, so it
            // does not finish the turn. It stays a `codex:response_item/message` event (the
            // text is `agent_message`'s, when there is one).
            if ptype == "message"
                && get("role").and_then(Value::as_str) == Some("assistant")
                && get("phase").and_then(Value::as_str) != Some("commentary")
            {
                self.finished = self.pending_calls.is_empty();
                let text = output_text(get("content"));
                if !text.is_empty() {
                    self.last_text = Some(text);
                }
            }
            let raw = format!("{prefix}{ptype}");
            self.unmapped(out, ts, ts_syn, &raw, record);
        }
    }

    /// A bare response item of an older rollout. Output items (reasoning, assistant
    /// message, `*_call`) extend the model call in progress; an input item (a tool output,
    /// a user message) ends it first. A user message that is not session context is a
    /// prompt: it opens an inferred turn as `user_message` does.
    fn legacy_item(
        &mut self,
        out: &mut Vec<Event>,
        line_no: u64,
        ts: i64,
        ts_syn: bool,
        record: Map<String, Value>,
    ) {
        let ty = record.get("type").and_then(Value::as_str).unwrap_or("");
        let role = record.get("role").and_then(Value::as_str);
        let output = ty == "reasoning"
            || ty.ends_with("_call")
            || (ty == "message" && role == Some("assistant"));
        if output {
            self.call_open = Some((ts, line_no, ts_syn));
        } else {
            self.end_model_call(out);
        }
        if ty == "message" && role == Some("user") && !codex_legacy::is_context_message(&record) {
            self.user_message(out, line_no, ts, ts_syn);
        }
        let payload = record.clone();
        self.item(out, (line_no, ts, ts_syn), &payload, record, "");
    }

    /// Ends the model call in progress of an older rollout: `model/end{inferred}` at its
    /// last output item (these rollouts record no usage or finish reason).
    fn end_model_call(&mut self, out: &mut Vec<Event>) {
        if let Some((ts, line, ts_syn)) = self.call_open.take() {
            let mut data = json!({ "inferred": true });
            if ts_syn {
                flag(&mut data, "ts_synthetic");
            }
            let turn = self.open_turn.clone();
            self.push(out, ts, turn.as_deref(), "model/end", data, line);
        }
    }

    /// An older rollout's session header: session = its `id`, file start = its
    /// `timestamp` (the lines after it carry none).
    fn legacy_header(&mut self, record: &Map<String, Value>) {
        self.legacy = true;
        let id = record.get("id").and_then(Value::as_str);
        self.session = Some(id_or(id, &self.rel));
        if let Some(t) = record
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339)
        {
            self.file_start = t;
        }
    }
}

/// The `output_text` blocks of a `response_item` message, joined.
fn output_text(content: Option<&Value>) -> String {
    content
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

/// `codex_error_info`: a bare code (`"unauthorized"`) or `{code: {http_status_code}}`.
fn codex_error_info(info: Option<&Value>) -> (Option<String>, Option<i64>) {
    match info {
        Some(Value::String(s)) => (Some(s.clone()), None),
        Some(Value::Object(m)) => match m.iter().next() {
            Some((code, detail)) => (
                Some(code.clone()),
                detail.get("http_status_code").and_then(Value::as_i64),
            ),
            None => (None, None),
        },
        _ => (None, None),
    }
}

impl Importer for CodexImporter {
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let record = Unmapped::parse(line)?;
        let header = self.session.is_none() && codex_legacy::is_header(&record);
        if header {
            self.legacy_header(&record);
        }
        let ty = match record.get("type").and_then(Value::as_str) {
            Some(t) => t,
            None if header => "session_meta",
            None if codex_legacy::is_state(&record) => "state",
            None => "record",
        }
        .to_string();
        if ty == "session_meta" && self.session.is_none() {
            let payload = record.get("payload");
            let id = payload.and_then(|p| p.get("id")).and_then(Value::as_str);
            self.session = Some(id_or(id, &self.rel));
            if let Some(t) = payload
                .and_then(|p| p.get("timestamp"))
                .and_then(Value::as_str)
                .and_then(parse_rfc3339)
            {
                self.file_start = t;
            }
        }
        let parsed = record
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339);
        let ts_syn = parsed.is_none();
        let ts = parsed.unwrap_or_else(|| synthetic_ts(self.file_start, line_no));
        self.ts = ts;
        self.ts_syn = ts_syn;
        match ty.as_str() {
            // A compaction between turns ends the finished turn before it.
            "compacted" => {
                self.settle(out);
                self.unmapped(out, ts, ts_syn, &ty, record);
            }
            "event_msg" => self.event_msg(out, line_no, ts, ts_syn, record),
            "response_item" => self.response_item(out, line_no, ts, ts_syn, record),
            // An older rollout's bare response item (no `payload` envelope).
            t if codex_legacy::is_response_item(t) && !record.contains_key("payload") => {
                self.legacy = true;
                self.legacy_item(out, line_no, ts, ts_syn, record);
            }
            _ => self.unmapped(out, ts, ts_syn, &ty, record),
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.end_model_call(out);
        self.settle(out);
        if let Some(line) = self.pending.as_ref().map(|p| p.line) {
            let before = out.len();
            self.flush_start(out);
            for ev in &mut out[before..] {
                ev.line = line;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    fn run(lines: &[&str]) -> Vec<Event> {
        feed(&mut CodexImporter::new(&context("r.jsonl")), lines).0
    }

    const META: &str = r#"{"timestamp":"2026-02-23T12:00:00Z","type":"session_meta","payload":{"id":"s1","cli_version":"0.1"}}"#;

    #[test]
    fn receipt_comes_before_the_turn_start_it_caused() {
        let evs = run(&[
            META,
            r#"{"timestamp":"2026-02-23T12:00:01Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}"#,
            r#"{"timestamp":"2026-02-23T12:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
            r#"{"timestamp":"2026-02-23T12:00:02Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}"#,
            r#"{"timestamp":"2026-02-23T12:00:03Z","type":"event_msg","payload":{"type":"user_message","message":"more"}}"#,
            r#"{"timestamp":"2026-02-23T12:00:04Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"ok"}}"#,
        ]);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "codex:session_meta",
                "codex:response_item/message",
                "inbox/receipt",
                "turn/start",
                "inbox/receipt",
                "turn/end",
                "agent/idle"
            ]
        );
        assert!(evs[2].data.contains(r#""kind":"prompt""#));
        assert!(evs[2].data.contains(r#""message_id":"r.jsonl:4""#));
        assert_eq!(evs[3].line, 2);
        assert!(evs[4].data.contains(r#""kind":"steer""#));
        let seqs: Vec<u64> = evs.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (0..7).collect::<Vec<_>>());
        assert!(evs.iter().all(|e| e.root == "s1"));
    }

    #[test]
    fn token_counts_errors_and_tools() {
        let evs = run(&[
            META,
            r#"{"timestamp":"2026-02-23T12:00:01Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}"#,
            r#"{"timestamp":"2026-02-23T12:00:02Z","type":"event_msg","payload":{"type":"error","message":"x","codex_error_info":{"http_connection_failed":{"http_status_code":502}}}}"#,
            r#"{"timestamp":"2026-02-23T12:00:03Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10},"last_token_usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":2,"reasoning_output_tokens":1}}}}"#,
            r#"{"timestamp":"2026-02-23T12:00:04Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10},"last_token_usage":{"input_tokens":10}}}}"#,
            r#"{"timestamp":"2026-02-23T12:00:05Z","type":"response_item","payload":{"type":"function_call","name":"exec","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}"#,
            r#"{"timestamp":"2026-02-23T12:00:06Z","type":"response_item","payload":{"type":"web_search_call","status":"completed","action":{"query":"q"}}}"#,
            r#"{"timestamp":"2026-02-23T12:00:07Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"replaced"}}"#,
        ]);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "codex:session_meta",
                "turn/start",
                "model/end",
                "model/end",
                "codex:event_msg/token_count",
                "tool/call",
                "tool/call",
                "tool/result",
                "turn/end"
            ]
        );
        let err: Value = serde_json::from_str(&evs[2].data).unwrap();
        assert_eq!(err["error"]["code"], "completion_failed");
        assert_eq!(err["error"]["details"]["http_status"], 502);
        let usage: Value = serde_json::from_str(&evs[3].data).unwrap();
        assert_eq!(usage["usage"]["input_tokens"], 10);
        assert_eq!(usage["usage"]["cached_input_tokens"], 4);
        assert_eq!(usage["usage"]["total_tokens"], 12);
        let call: Value = serde_json::from_str(&evs[5].data).unwrap();
        assert_eq!(call["arguments"]["cmd"], "ls");
        let web: Value = serde_json::from_str(&evs[6].data).unwrap();
        assert_eq!(web["name"], "web_search");
        assert_eq!(web["call_id"], "r.jsonl:7");
        // The error was followed by a successful call: it did not end the turn.
        assert!(!evs[8].data.contains("error"));
        assert!(evs[8].data.contains(r#""kind":"replaced""#));
    }

    #[test]
    fn older_rollout_turns_calls_and_tools() {
        let (evs, rejected) = feed(
            &mut CodexImporter::new(&context("r.jsonl")),
            &[
                r#"{"id":"s0","timestamp":"2025-09-10T18:58:38.331Z","instructions":"x"}"#,
                r#"{"record_type":"state"}"#,
                r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n</environment_context>"}]}"#,
                r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]}"#,
                r#"{"type":"reasoning","id":"rs_1","summary":[]}"#,
                r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}"#,
                r#"{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"\",\"metadata\":{\"exit_code\":2}}"}"#,
                r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#,
                r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"again"}]}"#,
            ],
        );
        assert!(rejected.is_empty());
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "codex:session_meta",
                "codex:state",
                "codex:message",
                "inbox/receipt",
                "turn/start",
                "codex:message",
                "codex:reasoning",
                "tool/call",
                "model/end",
                "tool/result",
                "codex:message",
                "model/end",
                "turn/end",
                "agent/idle",
                "inbox/receipt",
                "turn/start",
                "codex:message",
            ]
        );
        assert!(evs.iter().all(|e| e.root == "s0"));
        assert_eq!(evs[4].turn.as_deref(), Some("r.jsonl:4"));
        // The model call ends at its last output line, the tool call.
        assert_eq!(evs[8].line, 6);
        assert!(evs[8].data.contains(r#""inferred":true"#));
        assert!(evs[9].data.contains(r#""status":"error""#));
        assert!(evs[12].data.contains(r#""kind":"end_turn""#));
        assert!(evs[12].data.contains(r#""text":"done""#));
        // The last prompt's turn has no output yet: it stays open.
        assert_eq!(evs[15].turn.as_deref(), Some("r.jsonl:9"));
    }

    #[test]
    fn open_turn_at_end_of_file_is_started_and_not_ended() {
        let evs = run(&[
            META,
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}"#,
        ]);
        assert_eq!(evs.last().unwrap().kind, "turn/start");
        assert_eq!(evs.last().unwrap().line, 2);
        assert!(evs.last().unwrap().data.contains("ts_synthetic"));
        assert!(run(&["not json"]).is_empty());
    }
}
