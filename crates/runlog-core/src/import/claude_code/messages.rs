//! Claude Code's conversation records: assistant lines (model output blocks, API error
//! messages), user lines (prompts, tool results, interrupts, local commands) and `system`
//! records that end a turn.

use serde_json::{json, Map, Value};

use super::errors::{api_error, aws_error};
use super::{ClaudeCodeImporter, Msg, INTERRUPT};
use crate::event::Event;

impl ClaudeCodeImporter {
    pub(super) fn assistant(
        &mut self,
        out: &mut Vec<Event>,
        line: u64,
        session: &str,
        record: Map<String, Value>,
    ) {
        let msg = record.get("message");
        let uuid = record.get("uuid").and_then(Value::as_str).unwrap_or("");
        let id = msg
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .unwrap_or(uuid)
            .to_string();
        if self
            .sessions
            .get(session)
            .and_then(|s| s.msg.as_ref())
            .is_some_and(|m| m.id != id)
        {
            self.flush_msg(out, session);
        }
        // A new model response: the API answers only once every earlier `tool_use` has its
        // result, so calls of earlier messages were answered even where the log lacks the
        // result line (trimmed or lost lines). They no longer keep the turn from finishing.
        let sess = self.sessions.entry(session.to_string()).or_default();
        if sess.last_msg_id.as_deref() != Some(id.as_str()) {
            sess.pending.clear();
            sess.last_msg_id = Some(id.clone());
        }
        // Claude Code's own message with no turn open (the answer to a local command such as
        // `/login`, `/model`): no model was called, so no turn.
        let synthetic =
            msg.and_then(|m| m.get("model")).and_then(Value::as_str) == Some("<synthetic>");
        if synthetic && self.open_turn(session).is_none() {
            return self.keep(out, session, "assistant", Value::Object(record));
        }
        if self.open_turn(session).is_none() {
            self.infer_turn(out, line, session, uuid);
        }
        let turn = self.open_turn(session);
        let blocks = msg.and_then(|m| m.get("content"));
        // An API error message, or a provider's error envelope written as the message (a
        // Bedrock gateway's `{"Output": {"__type": "…#UnknownOperationException"}}` with no
        // content): the call failed.
        let envelope = msg.and_then(|m| m.get("Output")).and_then(aws_error);
        if envelope.is_some()
            || record.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
        {
            let err = envelope.unwrap_or_else(|| {
                let text = content_text(blocks);
                let status = record.get("apiErrorStatus").and_then(Value::as_i64);
                api_error(&text, record.get("error").and_then(Value::as_str), status)
            });
            return self.failed_call(out, session, turn.as_deref(), err);
        }
        let usage = msg.and_then(|m| m.get("usage")).cloned();
        let stop = msg
            .and_then(|m| m.get("stop_reason"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let sess = self.sessions.entry(session.to_string()).or_default();
        let m = sess.msg.get_or_insert_with(|| Msg {
            id,
            turn: turn.clone(),
            line,
            usage: None,
            stop_reason: None,
            text: String::new(),
        });
        m.line = line;
        if usage.is_some() {
            m.usage = usage;
        }
        if stop.is_some() {
            m.stop_reason = stop;
        }
        let mut mapped = 0;
        for b in blocks.and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| b.get(k).and_then(Value::as_str);
            let (kind, data) = match s("type") {
                Some("text") => {
                    let t = s("text").unwrap_or_default();
                    if let Some(sess) = self.sessions.get_mut(session) {
                        sess.finished = sess.pending.is_empty();
                        sess.failed = None;
                        if let Some(m) = sess.msg.as_mut() {
                            m.text.push_str(t);
                        }
                    }
                    ("text/delta", json!({ "text": t }))
                }
                Some("thinking") => {
                    self.working(session);
                    (
                        "reasoning/delta",
                        json!({ "text": s("thinking").unwrap_or_default() }),
                    )
                }
                Some("tool_use") => self.tool_use(session, turn.as_ref(), b),
                _ => continue,
            };
            self.push(out, 0, session, turn.as_deref(), kind, data);
            mapped += 1;
        }
        if mapped == 0 {
            self.keep(out, session, "assistant", Value::Object(record));
        }
    }

    /// Output with no prompt before it opens a turn: the answer to a command (its line is the
    /// prompt), or a resumed or continued session (an inferred turn).
    fn infer_turn(&mut self, out: &mut Vec<Event>, line: u64, session: &str, uuid: &str) {
        let command = self
            .sessions
            .get_mut(session)
            .and_then(|s| s.command.take());
        if let (Some(id), true) = (&command, session == self.root()) {
            let data = json!({ "message_id": id, "kind": "prompt", "inferred": true });
            self.push(out, 0, session, None, "inbox/receipt", data);
        }
        let turn = command
            .clone()
            .unwrap_or_else(|| crate::import::id_or(Some(uuid), &format!("{}:{line}", self.rel)));
        self.sessions.entry(session.to_string()).or_default().turn = Some(turn.clone());
        let data = match command {
            Some(_) => json!({ "inferred": true, "command": true }),
            None => json!({ "inferred": true }),
        };
        self.push(out, 0, session, Some(&turn), "turn/start", data);
    }

    /// A call Claude Code gave up on: `model/end{error}`; the turn ends here (a subagent's
    /// with its Task).
    fn failed_call(&mut self, out: &mut Vec<Event>, session: &str, turn: Option<&str>, err: Value) {
        if let Some(s) = self.sessions.get_mut(session) {
            s.finished = s.pending.is_empty();
            s.failed = Some(err.clone());
        }
        self.push(out, 0, session, turn, "model/end", json!({ "error": err }));
        if !self.sessions.get(session).is_some_and(|s| s.agent) {
            self.settle(out, session);
        }
    }

    /// A `tool_use` block: `tool/call`, pending until its result; a Task (`Agent`) call is
    /// remembered as the caller of the subagent it spawns.
    fn tool_use(
        &mut self,
        session: &str,
        turn: Option<&String>,
        b: &Value,
    ) -> (&'static str, Value) {
        let s = |k: &str| b.get(k).and_then(Value::as_str);
        let call_id = s("id").unwrap_or_default();
        let name = s("name").unwrap_or_default();
        if matches!(name, "Task" | "Agent") {
            let at = (session.to_string(), turn.cloned());
            self.tasks.insert(call_id.to_string(), at);
            let prompt = b
                .get("input")
                .and_then(|i| i.get("prompt"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            self.unlinked_tasks.push((
                call_id.to_string(),
                prompt.to_string(),
                session.to_string(),
                turn.cloned(),
            ));
        }
        self.working(session);
        if let Some(sess) = self.sessions.get_mut(session) {
            sess.pending.insert(call_id.to_string());
        }
        let arguments = b.get("input").cloned().unwrap_or_else(|| json!({}));
        let data = json!({ "call_id": call_id, "name": name, "arguments": arguments });
        ("tool/call", data)
    }

    pub(super) fn user(
        &mut self,
        out: &mut Vec<Event>,
        line: u64,
        session: &str,
        record: Map<String, Value>,
    ) {
        let content = record.get("message").and_then(|m| m.get("content"));
        let is = |k: &str| record.get(k).and_then(Value::as_bool) == Some(true);
        let results: Vec<&Value> = content
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .collect();
        // Meta lines are kept, but tool results in them are results all the same.
        if results.is_empty()
            && (is("isMeta") || is("isCompactSummary") || is("isVisibleInTranscriptOnly"))
        {
            return self.keep(out, session, "user", Value::Object(record));
        }
        let text = content_text(content);
        if !results.is_empty() {
            let turn = self.open_turn(session);
            for r in &results {
                let call_id = r.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                let mut data = json!({ "call_id": call_id, "status": "ok" });
                if r.get("is_error").and_then(Value::as_bool) == Some(true) {
                    data["status"] = json!("error");
                    let detail = first_line(&content_text(r.get("content")));
                    if !detail.is_empty() {
                        data["detail"] = json!(detail);
                    }
                }
                self.push(out, 0, session, turn.as_deref(), "tool/result", data);
                self.working(session);
                if let Some(sess) = self.sessions.get_mut(session) {
                    sess.pending.remove(call_id);
                }
                // The Task that spawned an inline sidechain: its result ends the chain's turn.
                if let Some(chain) = self.task_chain.remove(call_id) {
                    let failed = r.get("is_error").and_then(Value::as_bool) == Some(true);
                    let kind = if failed { "error" } else { "completed" };
                    let mut d = json!({ "reason": { "kind": kind }, "inferred": true });
                    let text = content_text(r.get("content"));
                    if !text.is_empty() {
                        d["text"] = json!(text);
                    }
                    self.end_turn(out, &chain, d);
                }
            }
            // A Task's result tells how its subagent ended.
            let first_call = results[0].get("tool_use_id").and_then(Value::as_str);
            if let Some(res) = record.get("toolUseResult").filter(|r| r.is_object()) {
                if let (Some(agent_id), Some(call_id)) =
                    (res.get("agentId").and_then(Value::as_str), first_call)
                {
                    self.agent_result(out, agent_id, call_id, res);
                }
            }
            if text.starts_with(INTERRUPT) {
                self.interrupt(out, session);
            }
            return;
        }
        if text.starts_with(INTERRUPT) {
            if self.open_turn(session).is_some() {
                return self.interrupt(out, session);
            }
            return self.keep(out, session, "user", Value::Object(record));
        }
        // A local command (`/model`, `/login`, `!ls`) or its output: no prompt to the model.
        if is_local_command(&text) {
            self.settle(out, session);
            if self.open_turn(session).is_none() {
                let uuid = record.get("uuid").and_then(Value::as_str);
                let id = crate::import::id_or(uuid, &format!("{}:{line}", self.rel));
                let sess = self.sessions.entry(session.to_string()).or_default();
                sess.command.get_or_insert(id);
            }
            return self.keep(out, session, "user", Value::Object(record));
        }
        // A prompt: the turn before it ended if its assistant had finished.
        self.settle(out, session);
        let uuid = record.get("uuid").and_then(Value::as_str);
        let id = crate::import::id_or(uuid, &format!("{}:{line}", self.rel));
        let is_root = session == self.root();
        match (self.open_turn(session), is_root) {
            (None, _) => {
                if is_root {
                    self.push(
                        out,
                        0,
                        session,
                        None,
                        "inbox/receipt",
                        json!({ "message_id": id, "kind": "prompt" }),
                    );
                }
                let sess = self.sessions.entry(session.to_string()).or_default();
                sess.turn = Some(id.clone());
                sess.command = None;
                sess.last_text.clear();
                sess.last_stop = None;
                sess.finished = false;
                sess.failed = None;
                self.push(out, 0, session, Some(&id), "turn/start", json!({}));
            }
            (Some(_), true) => self.push(
                out,
                0,
                session,
                None,
                "inbox/receipt",
                json!({ "message_id": id, "kind": "steer" }),
            ),
            (Some(_), false) => self.keep(out, session, "user", Value::Object(record)),
        }
    }

    fn interrupt(&mut self, out: &mut Vec<Event>, session: &str) {
        self.end_turn(
            out,
            session,
            json!({ "reason": { "kind": "interrupted", "cause": "user" } }),
        );
    }

    pub(super) fn system(
        &mut self,
        out: &mut Vec<Event>,
        session: &str,
        record: Map<String, Value>,
    ) {
        let subtype = record.get("subtype").and_then(Value::as_str);
        let prevented = record.get("preventedContinuation").and_then(Value::as_bool) == Some(true);
        let ends = match subtype {
            Some("stop_hook_summary") => !prevented,
            Some("turn_duration") => true,
            _ => false,
        };
        if ends && self.open_turn(session).is_some() {
            self.flush_msg(out, session);
            let sess = self.sessions.entry(session.to_string()).or_default();
            let kind = sess.last_stop.clone().unwrap_or_else(|| "end_turn".into());
            let mut data = match &sess.failed {
                Some(err) => {
                    json!({ "reason": { "kind": "error", "error": err }, "inferred": true })
                }
                None => json!({ "reason": { "kind": kind }, "inferred": true }),
            };
            if !sess.last_text.is_empty() {
                data["text"] = json!(sess.last_text);
            }
            return self.end_turn(out, session, data);
        }
        match subtype {
            Some("api_error") => return self.api_error_record(out, session, record),
            // A compaction between turns: the turn before it is over if it had finished.
            Some("compact_boundary") => self.settle(out, session),
            _ => {}
        }
        self.keep(out, session, "system", Value::Object(record))
    }
}

/// Whether a user line is a local command or its output (`<command-name>`,
/// `<local-command-stdout>`, bash mode's `<bash-input>`, 2.0.x's plain `Unknown slash command:
/// <name>` answer, …) rather than a prompt.
fn is_local_command(text: &str) -> bool {
    let t = text.trim_start();
    [
        "Unknown slash command: ",
        "<command-name>",
        "<command-message>",
        "<local-command-",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

/// The text of a `content` value: a string, or its `text` blocks joined.
pub(super) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The first line of a text, at most 200 characters.
fn first_line(text: &str) -> String {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}
