//! Gemini CLI records to canonical events: the session's metadata, its messages in order,
//! and the turns they make (Gemini CLI records prompts and answers, not turn ends: those
//! are inferred, see the module header of [`super`]).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::error::error_value;
use super::Record;
use crate::event::Event;
use crate::import::Payloads;
use crate::import::{
    event, flag, id_or, parse_rfc3339, unmapped, usage_inclusive, FileContext, Format,
};

/// What the open turn did last (decides how it ends).
#[derive(Clone)]
enum Last {
    /// Nothing since its prompt.
    Nothing,
    /// A model answer that called no tool.
    Answered,
    /// A model answer that called tools (the model is called again after them).
    CalledTools,
    /// A failed model call.
    Failed(Value),
}

pub(crate) struct Emitter {
    payloads: Payloads,
    rel: String,
    /// Earlier versions of messages written again, by message id.
    pub(crate) superseded: Vec<(String, Record)>,
    root: String,
    session: String,
    next_seq: u64,
    /// The last recorded time (what a record without one is given).
    last_ts: i64,
    /// The time of the open turn's last recorded event (when an inferred end happened).
    turn_ts: i64,
    open_turn: Option<String>,
    last: Last,
    /// The open turn's last answer text (an inferred `end_turn`'s text).
    last_text: Option<String>,
    /// A subagent's chat: its turns open no interval (no receipt, no idle).
    subagent: bool,
}

/// A message's text: a string, or the `text` of its parts.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(Value::Object(p)) => p
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

/// A tool call's recorded `status` as a canonical `tool/result` status; `None` for a call
/// that never finished (`scheduled`, `validating`, `awaiting_approval`, `executing`).
fn tool_status(raw: &str) -> Option<&'static str> {
    Some(match raw {
        "success" => "ok",
        "error" => "error",
        "cancelled" => "denied",
        _ => return None,
    })
}

impl Emitter {
    pub(crate) fn new(ctx: &FileContext) -> Self {
        Emitter {
            payloads: Payloads::of(ctx),
            rel: ctx.rel.clone(),
            superseded: Vec::new(),
            root: ctx.rel.clone(),
            session: ctx.rel.clone(),
            next_seq: 0,
            last_ts: 0,
            turn_ts: 0,
            open_turn: None,
            last: Last::Nothing,
            last_text: None,
            subagent: false,
        }
    }

    /// Every record of the file, in order, as events.
    pub(crate) fn all(&mut self, records: Vec<Record>, out: &mut Vec<Event>) {
        if let Some(meta) = records.iter().find(|r| is_metadata(&r.value)) {
            self.identify(&meta.value);
        }
        let mut earlier: HashMap<String, Vec<Record>> = HashMap::new();
        for (id, r) in std::mem::take(&mut self.superseded) {
            earlier.entry(id).or_default().push(r);
        }
        let mut last_line = 0;
        for r in records {
            last_line = last_line.max(r.line);
            let id = r
                .value
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for old in earlier.remove(id).unwrap_or_default() {
                self.keep(out, old.line, old.value);
            }
            self.one(out, r);
        }
        if self.open_turn.is_some() {
            match self.last.clone() {
                Last::Answered => self.end(out, json!({ "kind": "end_turn" }), last_line),
                Last::Failed(e) => self.end(out, json!({ "kind": "error", "error": e }), last_line),
                // Cut off while working, or a prompt with no answer: nothing is invented.
                Last::CalledTools | Last::Nothing => {}
            }
        }
    }

    /// Root, session and start time from the metadata.
    fn identify(&mut self, meta: &Value) {
        let s = |k: &str| meta.get(k).and_then(Value::as_str);
        self.session = id_or(s("sessionId"), &self.rel);
        self.root = self.session.clone();
        if s("kind") == Some("subagent") {
            self.subagent = true;
            if let Some(parent) = parent_folder(&self.rel) {
                self.root = parent;
            }
        }
        self.last_ts = s("startTime").and_then(parse_rfc3339).unwrap_or(0);
    }

    fn one(&mut self, out: &mut Vec<Event>, r: Record) {
        let v = &r.value;
        if is_metadata(v) {
            let parent = (self.root != self.session).then(|| self.root.clone());
            let mut data = json!({ "parent": parent, "parent_turn": null });
            if let Some(k) = v.get("kind") {
                data["kind"] = k.clone();
            }
            let (ts, syn) = self.ts(v.get("startTime"));
            return self.push(out, ts, syn, None, "session/start", data, r.line);
        }
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "user" if is_tool_response(v) => self.tool_response(out, r),
            "user" if is_shell_escape(v) => self.keep(out, r.line, r.value),
            "user" => self.prompt(out, r),
            "gemini" => self.answer(out, r),
            "error" => {
                let (ts, syn) = self.ts(v.get("timestamp"));
                let err = error_value(&text_of(v.get("content")));
                let turn = self.open_turn.clone();
                let data = json!({ "error": err.clone() });
                self.push(out, ts, syn, turn.as_deref(), "model/end", data, r.line);
                if self.open_turn.is_some() {
                    self.last = Last::Failed(err);
                }
            }
            "info" if self.open_turn.is_some() && is_cancel(&text_of(v.get("content"))) => {
                let (ts, syn) = self.ts(v.get("timestamp"));
                let reason = json!({ "kind": "cancelled", "cause": "user" });
                self.end_at(out, ts, syn, reason, false, Some(r.line));
            }
            _ => self.keep(out, r.line, r.value),
        }
    }

    /// A user message: the open turn ends, a new one opens.
    fn prompt(&mut self, out: &mut Vec<Event>, r: Record) {
        let v = &r.value;
        let (ts, syn) = self.ts(v.get("timestamp"));
        if self.open_turn.is_some() {
            // A turn that had answered or failed ended then; one still working was
            // interrupted by this prompt.
            let (reason, at) = match self.last.clone() {
                Last::Failed(e) => (json!({ "kind": "error", "error": e }), self.turn_ts),
                Last::Answered => (json!({ "kind": "end_turn" }), self.turn_ts),
                Last::CalledTools | Last::Nothing => {
                    (json!({ "kind": "interrupted", "cause": "user" }), ts)
                }
            };
            self.end_at(out, at, syn, reason, true, Some(r.line));
        }
        let id = v.get("id").and_then(Value::as_str);
        let turn = id_or(id, &format!("{}:{}", self.rel, r.line));
        if !self.subagent {
            let data = json!({ "message_id": turn, "kind": "prompt" });
            self.push(out, ts, syn, None, "inbox/receipt", data, r.line);
        }
        let data = json!({ "text": text_of(v.get("content")) });
        self.push(out, ts, syn, Some(&turn), "turn/start", data, r.line);
        self.open_turn = Some(turn);
        self.turn_ts = ts;
        self.last = Last::Nothing;
    }

    /// A `user` message of tool results sent back to the model: part of the open turn
    /// (whose tool calls and results the answer that called them gave), kept as
    /// `gemini-cli:user`.
    fn tool_response(&mut self, out: &mut Vec<Event>, r: Record) {
        let (ts, syn) = self.ts(r.value.get("timestamp"));
        let turn = self.open_turn.clone();
        let kind = unmapped(Format::GeminiCli, "user");
        self.push(out, ts, syn, turn.as_deref(), &kind, r.value, r.line);
    }

    /// A model answer: thoughts, text, tool calls, the call's end, the tools' results.
    fn answer(&mut self, out: &mut Vec<Event>, r: Record) {
        let v = &r.value;
        let (ts, syn) = self.ts(v.get("timestamp"));
        let turn = self.open_turn.clone();
        let turn = turn.as_deref();
        let line = r.line;
        for t in v
            .get("thoughts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (tts, tsyn) = self.ts(t.get("timestamp"));
            let data = json!({
                "text": t.get("description").cloned().unwrap_or(Value::Null),
                "subject": t.get("subject").cloned().unwrap_or(Value::Null),
            });
            self.push(out, tts, tsyn, turn, "reasoning/delta", data, line);
        }
        let text = text_of(v.get("content"));
        if !text.is_empty() {
            self.push(
                out,
                ts,
                syn,
                turn,
                "text/delta",
                json!({ "text": text }),
                line,
            );
        }
        let calls = v.get("toolCalls").and_then(Value::as_array);
        let calls: Vec<&Value> = calls.into_iter().flatten().collect();
        for c in &calls {
            let mut data = json!({
                "call_id": call_id(c, line),
                "name": c.get("name").cloned().unwrap_or(Value::Null),
                "arguments": c.get("args").cloned().unwrap_or(Value::Null),
            });
            if let Some(n) = c.get("displayName") {
                data["display_name"] = n.clone();
            }
            self.push(out, ts, syn, turn, "tool/call", data, line);
        }
        let mut data = json!({});
        if let Some(t) = v.get("tokens").filter(|t| t.is_object()) {
            data["usage"] = usage(t);
        }
        if let Some(m) = v.get("model").filter(|m| m.is_string()) {
            data["model"] = m.clone();
        }
        self.push(out, ts, syn, turn, "model/end", data, line);
        for c in &calls {
            let raw = c.get("status").and_then(Value::as_str).unwrap_or("");
            let Some(status) = tool_status(raw) else {
                continue;
            };
            let (cts, csyn) = self.ts(c.get("timestamp"));
            let mut data =
                json!({ "call_id": call_id(c, line), "status": status, "raw_status": raw });
            if status != "ok" {
                if let Some(d) = detail(c) {
                    data["detail"] = Value::String(d);
                }
            }
            self.push(out, cts, csyn, turn, "tool/result", data, line);
        }
        if self.open_turn.is_some() {
            self.last_text = (!text.is_empty()).then_some(text);
            self.last = if calls.is_empty() {
                Last::Answered
            } else {
                Last::CalledTools
            };
        }
    }

    /// Ends the open turn at the end of the file (inferred, at the time of its last event,
    /// on the file's last record line).
    fn end(&mut self, out: &mut Vec<Event>, reason: Value, line: u64) {
        let ts = self.turn_ts;
        self.end_at(out, ts, false, reason, true, Some(line));
    }

    /// `turn/end{reason}` of the open turn + the synthetic idle that closes the interval.
    fn end_at(
        &mut self,
        out: &mut Vec<Event>,
        ts: i64,
        syn: bool,
        reason: Value,
        inferred: bool,
        line: Option<u64>,
    ) {
        let Some(turn) = self.open_turn.take() else {
            return;
        };
        let line = line.unwrap_or(0);
        let text = self.last_text.take();
        let mut data = json!({ "reason": reason });
        if let Some(t) = text.filter(|_| data["reason"]["kind"] == "end_turn") {
            data["text"] = Value::String(t);
        }
        if inferred {
            flag(&mut data, "inferred");
        }
        self.push(out, ts, syn, Some(&turn), "turn/end", data, line);
        self.last = Last::Nothing;
        if self.subagent {
            return;
        }
        let mut data = json!({});
        flag(&mut data, "synthetic");
        if inferred {
            flag(&mut data, "inferred");
        }
        self.push(out, ts, syn, None, "agent/idle", data, line);
    }

    /// A record with no mapping, kept as `gemini-cli:<type>`.
    fn keep(&mut self, out: &mut Vec<Event>, line: u64, value: Value) {
        let raw = match &value {
            Value::Object(m) if m.contains_key("$set") => "$set".to_string(),
            Value::Object(m) if m.contains_key("$rewindTo") => "$rewindTo".to_string(),
            Value::Object(m) => m
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("record")
                .to_string(),
            _ => "record".to_string(),
        };
        let (ts, syn) = self.ts(value.get("timestamp"));
        let data = match value {
            Value::Object(m) => Value::Object(m),
            other => json!({ "value": other }),
        };
        let kind = unmapped(Format::GeminiCli, &raw);
        self.push(out, ts, syn, None, &kind, data, line);
    }

    /// A record's time, or, when it has none, the last recorded one (`ts_synthetic`).
    fn ts(&mut self, v: Option<&Value>) -> (i64, bool) {
        match v.and_then(Value::as_str).and_then(parse_rfc3339) {
            Some(t) if t != 0 => {
                self.last_ts = t;
                (t, false)
            }
            _ => (self.last_ts, true),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        out: &mut Vec<Event>,
        ts: i64,
        syn: bool,
        turn: Option<&str>,
        kind: &str,
        mut data: Value,
        line: u64,
    ) {
        if syn {
            flag(&mut data, "ts_synthetic");
        } else if turn.is_some() {
            self.turn_ts = ts;
        }
        let mut ev = event(
            self.next_seq,
            ts,
            &self.root,
            &self.session,
            turn,
            kind,
            self.payloads.data(kind, data),
        );
        ev.line = line;
        self.next_seq += 1;
        out.push(ev);
    }
}

/// The session's metadata: the first record of a `.jsonl` chat, or the document without its
/// messages.
fn is_metadata(v: &Value) -> bool {
    v.get("sessionId").is_some_and(Value::is_string) && v.get("type").is_none()
}

/// Whether a `user` message holds only `functionResponse` parts: the results of the tools
/// the model called, which Gemini CLI's `.jsonl` chats record as a `user` message after the
/// answer that called them (no prompt).
fn is_tool_response(v: &Value) -> bool {
    match v.get("content") {
        Some(Value::Array(parts)) => {
            !parts.is_empty() && parts.iter().all(|p| p.get("functionResponse").is_some())
        }
        _ => false,
    }
}

/// Whether a `user` message is the record of a command the user ran in shell mode (`!cmd`):
/// Gemini CLI adds it to the chat as "I ran the following shell command: …" for the model to
/// read with the next prompt, and calls no model (`addShellCommandToGeminiHistory`).
fn is_shell_escape(v: &Value) -> bool {
    text_of(v.get("content")).starts_with("I ran the following shell command:")
}

/// "Request cancelled." — what Gemini CLI records when the user stops a turn.
fn is_cancel(text: &str) -> bool {
    text.trim_start().starts_with("Request cancelled")
}

/// The folder a subagent's chat is written in (`chats/<parent session id>/<id>.jsonl`).
fn parent_folder(rel: &str) -> Option<String> {
    let mut parts = rel.rsplit('/');
    parts.next()?;
    let parent = parts.next()?;
    (!parent.is_empty() && parent != "chats").then(|| parent.to_string())
}

fn call_id(c: &Value, line: u64) -> String {
    match c.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!(
            "line{line}:{}",
            c.get("name").and_then(Value::as_str).unwrap_or("")
        ),
    }
}

/// What a failed or cancelled call reported: its `resultDisplay` text, else the
/// `functionResponse`'s `error`.
fn detail(c: &Value) -> Option<String> {
    if let Some(s) = c.get("resultDisplay").and_then(Value::as_str) {
        return Some(s.to_string());
    }
    c.get("result")?
        .as_array()?
        .iter()
        .find_map(|p| p.pointer("/functionResponse/response/error"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Gemini's `tokens` as canonical Usage. `input` (promptTokenCount) includes `cached`; the
/// thoughts are output the model wrote; `tool` (toolUsePromptTokenCount) is prompt input.
/// So `total` = input + output.
fn usage(t: &Value) -> Value {
    let n = |k: &str| crate::import::token_count(t.get(k)).unwrap_or(0);
    usage_inclusive(
        n("input") + n("tool"),
        n("cached"),
        n("output") + n("thoughts"),
        n("thoughts"),
    )
}
