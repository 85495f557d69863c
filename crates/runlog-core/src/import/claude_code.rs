//! Claude Code transcripts: `~/.claude/projects/<project>/<sessionId>.jsonl`
//! and its subagents' files `<sessionId>/subagents/agent-<agentId>.jsonl`, one record per line
//! (`type` = `user`, `assistant`, `system`, `progress`, `queue-operation`,
//! `file-history-snapshot`, `summary`…); docs/importers/claude-code.md says what they give.
//!
//! root = `sessionId`; session = `sessionId`, or `<sessionId>/<agentId>` for a subagent's
//! records (`agentId`; a sidechain without one: `<sessionId>/sidechain`); turn = the `uuid`
//! of the prompt that opened it.
//!
//! | record | canonical |
//! |---|---|
//! | user prompt (text, not `isMeta` / `isCompactSummary` / tool results / interrupt) | root: `inbox/receipt{message_id: uuid, kind: prompt}` + `turn/start`, or `{kind: steer}` while a turn is open; subagent: `turn/start` |
//! | `queue-operation` `enqueue` | `inbox/receipt{message_id: "<file>:<line>", kind: queued}` |
//! | assistant lines (one content block each) | `text/delta`, `reasoning/delta`, `tool/call`; per `message.id`, once its last line was read, `model/end{finish_reason: stop_reason, usage}` (disjoint usage) |
//! | assistant `isApiErrorMessage` (`API Error: <status> {json}`) | `model/end{error}` |
//! | user `tool_result` | `tool/result{ok \| error (is_error), detail: first line of the error}` |
//! | `[Request interrupted by user…]` | `turn/end{kind: interrupted, cause: user}` + *syn* `agent/idle` |
//! | first `system` `stop_hook_summary` (not `preventedContinuation`) or `turn_duration` while a turn is open | `turn/end{kind: stop_reason ?? end_turn, text: last message's text, inferred}` + *syn* `agent/idle` |
//! | Task `tool_use` → `progress` `agent_progress{agentId}` (or its `tool_result`'s `toolUseResult.agentId`) | `session/start{parent: sessionId, parent_turn: the Task's turn}` of `<sessionId>/<agentId>` |
//! | the Task's `tool_result` with `toolUseResult{agentId, status}` | the subagent turn's `turn/end{kind: status, text, inferred}` (its file has no end marker) |
//!
//! `idle` and receipts belong to the root session only. Everything else (progress, hooks,
//! snapshots, compaction boundaries and summaries, meta lines) is kept as
//! `claude-code:<type>` in the open turn. A turn with no end marker stays open.
//!
//! Time: the file's line order is the order Claude Code wrote, but its `timestamp`s are
//! creation times that may run backwards by a few ms (tool results, hook progress). Since
//! ingest orders a root spread over several files (a transcript and its subagents) by
//! time, each event's `ts` is `max(timestamp, previous ts)` of its file, so that order is
//! kept; a record without a timestamp takes the previous one (`data.ts_synthetic`).
//! `seq` numbers the file's events; ingest renumbers the merged root.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::{
    error_object, event, flag, parse_rfc3339, token_count, unmapped, usage_disjoint, FileContext,
    Format, Importer, Unmapped,
};
use crate::event::Event;

/// The model message (`message.id`) whose block lines are being read.
struct Msg {
    id: String,
    turn: Option<String>,
    /// The message's last line so far (its `model/end` is attributed there).
    line: u64,
    usage: Option<Value>,
    stop_reason: Option<String>,
    text: String,
}

/// What the importer tracks per session of the file.
#[derive(Default)]
struct Sess {
    /// The open turn.
    turn: Option<String>,
    msg: Option<Msg>,
    /// Text of the open turn's last message with text, and the last message's stop reason.
    last_text: String,
    last_stop: Option<String>,
    /// Tool calls of the open turn with no result yet.
    pending: HashSet<String>,
    /// The open turn's last output is a final answer: a text block (or a stop reason other
    /// than `tool_use`) with no tool call pending and nothing after it.
    finished: bool,
    /// The open turn's last output was an API error message Claude Code gave up on.
    failed: Option<Value>,
    /// The `message.id` of the session's last assistant line.
    last_msg_id: Option<String>,
    /// A subagent session whose end comes from its parent's Task result (never inferred at
    /// the end of its file).
    agent: bool,
    /// The uuid of a local command line (`/model`, `/login`, a custom command) read while no
    /// turn was open: it becomes the turn's prompt if the model answers it.
    command: Option<String>,
}

/// A subagent as the parent transcript knows it.
#[derive(Default)]
struct Agent {
    started: bool,
    /// The subagent's turn: the uuid of its first message (`agent_progress.data.message`).
    turn: Option<String>,
}

pub struct ClaudeCodeImporter {
    rel: String,
    next_seq: u64,
    /// The last `ts` given (µs); `None` before the first timestamp.
    last_ts: Option<i64>,
    root: Option<String>,
    /// The session of the last record: the one of records that name none.
    file_session: Option<String>,
    /// Records read before any `sessionId` / timestamp: (line, record).
    held: Vec<(u64, Map<String, Value>)>,
    sessions: HashMap<String, Sess>,
    /// Task `tool_use` id → (session, turn) that called it.
    tasks: HashMap<String, (String, Option<String>)>,
    agents: HashMap<String, Agent>,
    /// For a file under `<sessionId>/subagents/`: the parent session named by the path (the
    /// root, whatever `sessionId` its records carry) and the file's agent id.
    path_root: Option<(String, String)>,
    /// Inline sidechains (1.0.x): record uuid → its chain's session.
    chain_of: HashMap<String, String>,
    /// The last inline sidechain session (for a record whose parent is unknown).
    last_chain: Option<String>,
    /// Task calls not yet given a chain: (call id, prompt, calling session, turn).
    unlinked_tasks: Vec<(String, String, String, Option<String>)>,
    /// Task call id → the inline chain session it spawned.
    task_chain: HashMap<String, String>,
}

const INTERRUPT: &str = "[Request interrupted by user";

impl ClaudeCodeImporter {
    pub fn new(ctx: &FileContext) -> Self {
        ClaudeCodeImporter {
            rel: ctx.rel.clone(),
            next_seq: 0,
            last_ts: None,
            root: None,
            file_session: None,
            held: Vec::new(),
            sessions: HashMap::new(),
            tasks: HashMap::new(),
            agents: HashMap::new(),
            path_root: subagent_path(&ctx.rel),
            chain_of: HashMap::new(),
            last_chain: None,
            unlinked_tasks: Vec::new(),
            task_chain: HashMap::new(),
        }
    }

    /// Ends the session's open turn where a reader of the log would, if its assistant has
    /// finished (final answer, nothing pending): `turn/end{…, inferred: true}`. A turn cut
    /// off mid-work (a tool call pending, a tool result not answered) stays open.
    /// A turn whose last output is Claude Code's synthetic API error message ends
    /// `{kind: error}`: Claude Code gave up on the call (its retries are `system` `api_error`
    /// records, which leave the turn open).
    fn settle(&mut self, out: &mut Vec<Event>, session: &str) {
        self.flush_msg(out, session);
        let Some(sess) = self.sessions.get(session) else {
            return;
        };
        if sess.turn.is_none() || !sess.finished || !sess.pending.is_empty() {
            return;
        }
        let mut data = match &sess.failed {
            Some(err) => json!({ "reason": { "kind": "error", "error": err }, "inferred": true }),
            None => {
                let kind = sess.last_stop.clone().unwrap_or_else(|| "end_turn".into());
                json!({ "reason": { "kind": kind }, "inferred": true })
            }
        };
        if !sess.last_text.is_empty() {
            data["text"] = json!(sess.last_text);
        }
        self.end_turn(out, session, data);
    }

    /// Marks the session's open turn as working (not finished).
    fn working(&mut self, session: &str) {
        if let Some(s) = self.sessions.get_mut(session) {
            s.finished = false;
            s.failed = None;
        }
    }

    fn root(&self) -> &str {
        self.root.as_deref().unwrap_or(&self.rel)
    }

    /// Advances the file's clock to a record's time (never backwards).
    fn clock(&mut self, ts: Option<i64>) {
        self.last_ts = match (ts, self.last_ts) {
            (Some(t), Some(last)) => Some(t.max(last)),
            (t, last) => t.or(last),
        };
    }

    fn push(
        &mut self,
        out: &mut Vec<Event>,
        line: u64,
        session: &str,
        turn: Option<&str>,
        kind: &str,
        data: Value,
    ) {
        let ts = self.last_ts.unwrap_or(0);
        let mut ev = event(self.next_seq, ts, self.root(), session, turn, kind, data);
        ev.line = line;
        out.push(ev);
        self.next_seq += 1;
    }

    fn open_turn(&self, session: &str) -> Option<String> {
        self.sessions.get(session).and_then(|s| s.turn.clone())
    }

    /// Keeps a record as `claude-code:<type>` in its session's open turn.
    fn keep(&mut self, out: &mut Vec<Event>, session: &str, raw_type: &str, mut data: Value) {
        let turn = self.open_turn(session);
        if let Value::Object(m) = &data {
            if !m.contains_key("timestamp") {
                flag(&mut data, "ts_synthetic");
            }
        }
        let kind = unmapped(Format::ClaudeCode, raw_type);
        self.push(out, 0, session, turn.as_deref(), &kind, data);
    }

    /// Ends the session's current model message: its `model/end`.
    fn flush_msg(&mut self, out: &mut Vec<Event>, session: &str) {
        let Some(sess) = self.sessions.get_mut(session) else {
            return;
        };
        let Some(msg) = sess.msg.take() else { return };
        if !msg.text.is_empty() {
            sess.last_text = msg.text;
        }
        // The stop reason of the last message, even none: a final text line whose
        // `stop_reason` is null (2.x streams one line per block) ends with `end_turn`, not
        // with an earlier message's `tool_use`.
        sess.last_stop = msg.stop_reason.clone();
        if msg.stop_reason.as_deref() == Some("tool_use") {
            sess.finished = false;
        }
        let mut data = json!({});
        if let Some(r) = msg.stop_reason {
            data["finish_reason"] = json!(r);
        }
        if let Some(u) = msg.usage {
            let n = |k: &str| token_count(u.get(k)).unwrap_or(0);
            data["usage"] = usage_disjoint(
                n("input_tokens"),
                n("cache_read_input_tokens"),
                n("cache_creation_input_tokens"),
                n("output_tokens"),
            );
        }
        data["message_id"] = json!(msg.id);
        self.push(
            out,
            msg.line,
            session,
            msg.turn.as_deref(),
            "model/end",
            data,
        );
    }

    /// Ends the session's open turn: `turn/end` (+ a synthetic idle for the root).
    fn end_turn(&mut self, out: &mut Vec<Event>, session: &str, data: Value) {
        self.flush_msg(out, session);
        let Some(sess) = self.sessions.get_mut(session) else {
            return;
        };
        let Some(turn) = sess.turn.take() else { return };
        sess.last_text.clear();
        sess.last_stop = None;
        sess.pending.clear();
        sess.finished = false;
        sess.failed = None;
        let inferred = data.get("inferred") == Some(&Value::Bool(true));
        self.push(out, 0, session, Some(&turn), "turn/end", data);
        if session == self.root() {
            let root = self.root().to_string();
            let mut idle = json!({ "synthetic": true });
            if inferred {
                flag(&mut idle, "inferred");
            }
            self.push(out, 0, &root, None, "agent/idle", idle);
        }
    }

    /// Emits a subagent's `session/start` once, naming the turn of the Task that spawned it.
    fn start_agent(&mut self, out: &mut Vec<Event>, agent_id: &str, tool_use: Option<&str>) {
        let agent = self.agents.entry(agent_id.to_string()).or_default();
        if agent.started {
            return;
        }
        agent.started = true;
        let (parent, parent_turn) = match tool_use.and_then(|t| self.tasks.get(t)) {
            Some((s, t)) => (s.clone(), t.clone()),
            None => (self.root().to_string(), None),
        };
        let child = format!("{}/{agent_id}", self.root());
        self.push(
            out,
            0,
            &child,
            None,
            "session/start",
            json!({ "parent": parent, "parent_turn": parent_turn, "agent_id": agent_id }),
        );
    }

    fn progress(
        &mut self,
        out: &mut Vec<Event>,
        session: &str,
        ts: Option<i64>,
        record: Map<String, Value>,
    ) {
        let data = record.get("data");
        let ds = |k: &str| data.and_then(|d| d.get(k)).and_then(Value::as_str);
        if ds("type") == Some("agent_progress") {
            if let Some(agent_id) = ds("agentId").map(str::to_string) {
                let tool_use = record
                    .get("parentToolUseID")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let message = data.and_then(|d| d.get("message"));
                let ms = |k: &str| message.and_then(|m| m.get(k)).and_then(Value::as_str);
                if !self.agents.get(&agent_id).is_some_and(|a| a.started) {
                    // The subagent started when its first message was written (its own
                    // file's first line), which may be a little before this record.
                    let first = ms("timestamp").and_then(parse_rfc3339);
                    self.clock(match (first, ts) {
                        (Some(f), Some(t)) => Some(f.min(t)),
                        (f, t) => f.or(t),
                    });
                    self.start_agent(out, &agent_id, tool_use.as_deref());
                }
                let agent = self.agents.entry(agent_id).or_default();
                if agent.turn.is_none() && ms("type") == Some("user") {
                    agent.turn = ms("uuid").map(str::to_string);
                }
            }
        }
        self.clock(ts);
        self.keep(out, session, "progress", Value::Object(record));
    }

    fn assistant(
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
        // Output with no prompt before it: the answer to a command (its line is the prompt),
        // or a resumed or continued session (an inferred turn).
        if self.open_turn(session).is_none() {
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
                .unwrap_or_else(|| super::id_or(Some(uuid), &format!("{}:{line}", self.rel)));
            self.sessions.entry(session.to_string()).or_default().turn = Some(turn.clone());
            let data = match command {
                Some(_) => json!({ "inferred": true, "command": true }),
                None => json!({ "inferred": true }),
            };
            self.push(out, 0, session, Some(&turn), "turn/start", data);
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
            if let Some(s) = self.sessions.get_mut(session) {
                s.finished = s.pending.is_empty();
                s.failed = Some(err.clone());
            }
            self.push(
                out,
                0,
                session,
                turn.as_deref(),
                "model/end",
                json!({ "error": err }),
            );
            // Claude Code gave up on the call: the turn ends here (a subagent's with its Task).
            if !self.sessions.get(session).is_some_and(|s| s.agent) {
                self.settle(out, session);
            }
            return;
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
                Some("tool_use") => {
                    let call_id = s("id").unwrap_or_default();
                    let name = s("name").unwrap_or_default();
                    if matches!(name, "Task" | "Agent") {
                        let at = (session.to_string(), turn.clone());
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
                            turn.clone(),
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
                _ => continue,
            };
            self.push(out, 0, session, turn.as_deref(), kind, data);
            mapped += 1;
        }
        if mapped == 0 {
            self.keep(out, session, "assistant", Value::Object(record));
        }
    }

    fn user(&mut self, out: &mut Vec<Event>, line: u64, session: &str, record: Map<String, Value>) {
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
                let id = super::id_or(uuid, &format!("{}:{line}", self.rel));
                let sess = self.sessions.entry(session.to_string()).or_default();
                sess.command.get_or_insert(id);
            }
            return self.keep(out, session, "user", Value::Object(record));
        }
        // A prompt: the turn before it ended if its assistant had finished.
        self.settle(out, session);
        let uuid = record.get("uuid").and_then(Value::as_str);
        let id = super::id_or(uuid, &format!("{}:{line}", self.rel));
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

    /// The Task's `toolUseResult{agentId, status, content}`: the subagent's turn ended.
    fn agent_result(&mut self, out: &mut Vec<Event>, agent_id: &str, call_id: &str, res: &Value) {
        self.start_agent(out, agent_id, Some(call_id));
        let Some(status) = res.get("status").and_then(Value::as_str) else {
            return;
        };
        let Some(turn) = self.agents.get_mut(agent_id).and_then(|a| a.turn.take()) else {
            return;
        };
        let child = format!("{}/{agent_id}", self.root());
        let mut data = json!({ "reason": { "kind": status }, "inferred": true });
        let text = content_text(res.get("content"));
        if !text.is_empty() {
            data["text"] = json!(text);
        }
        self.push(out, 0, &child, Some(&turn), "turn/end", data);
    }

    fn system(&mut self, out: &mut Vec<Event>, session: &str, record: Map<String, Value>) {
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

    /// A `system` `api_error` (one failed attempt Claude Code retries: `retryAttempt` of
    /// `maxRetries`) or an `error` record: `model/end{error}` in the open turn, one per
    /// attempt; the reducer marks it retried / recovered from what follows.
    fn api_error_record(
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

    /// One record whose root and time are known.
    fn record(
        &mut self,
        out: &mut Vec<Event>,
        line: u64,
        ts: Option<i64>,
        record: Map<String, Value>,
    ) {
        let s = |k: &str| {
            record
                .get(k)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
        };
        // A file under `subagents/` is one session, its own, whatever its records name
        // (a `/btw` side question or a compaction fork replays records of other sessions).
        let file_agent = self.path_root.as_ref().map(|(_, a)| a.clone());
        let session = match (
            file_agent.as_deref().or(s("agentId")),
            record.get("isSidechain"),
        ) {
            (Some(agent), _) => format!("{}/{agent}", self.root()),
            (None, Some(Value::Bool(true))) => self.chain_session(out, &record),
            (None, _) if s("sessionId").is_some() => self.root().to_string(),
            (None, _) => self
                .file_session
                .clone()
                .unwrap_or_else(|| self.root().to_string()),
        };
        self.file_session = Some(session.clone());
        if s("agentId").is_some() || file_agent.is_some() {
            // A context fork (`/btw` side question, compaction) has no Task to end its turn:
            // it ends like the root's, at the end of its file.
            let fork = file_agent.as_deref().is_some_and(is_context_fork);
            self.sessions.entry(session.clone()).or_default().agent = !fork;
        }
        let raw_type = s("type").unwrap_or("record").to_string();
        if raw_type != "progress" {
            self.clock(ts); // `progress` moves the clock itself
        }
        match raw_type.as_str() {
            "user" => self.user(out, line, &session, record),
            "assistant" => self.assistant(out, line, &session, record),
            "system" => self.system(out, &session, record),
            "progress" => self.progress(out, &session, ts, record),
            "error" => self.api_error_record(out, &session, record),
            "queue-operation" if s("operation") == Some("enqueue") && session == self.root() => {
                let id = format!("{}:{line}", self.rel);
                self.push(
                    out,
                    0,
                    &session,
                    None,
                    "inbox/receipt",
                    json!({ "message_id": id, "kind": "queued" }),
                );
            }
            _ => self.keep(out, &session, &raw_type, Value::Object(record)),
        }
    }

    /// The session of an inline sidechain record (1.0.x: subagents written into the main
    /// transcript, no `agentId`): each `parentUuid: null` starts a chain, its own session
    /// `<sessionId>/<uuid of its first record>`; later records follow their parent's chain.
    /// A new chain is the subagent of a pending Task call (the one whose prompt it repeats,
    /// else the oldest): its `session/start` names that call's turn.
    fn chain_session(&mut self, out: &mut Vec<Event>, record: &Map<String, Value>) -> String {
        let uuid = record.get("uuid").and_then(Value::as_str).unwrap_or("");
        let parent = record.get("parentUuid").and_then(Value::as_str);
        let known = parent.and_then(|p| self.chain_of.get(p)).cloned();
        let session = match (parent, known) {
            (_, Some(s)) => s,
            (Some(_), None) if self.last_chain.is_some() => self.last_chain.clone().unwrap(),
            _ => {
                let id = super::id_or(Some(uuid), &format!("{}:sidechain", self.rel));
                let session = format!("{}/{id}", self.root());
                let prompt = content_text(record.get("message").and_then(|m| m.get("content")));
                let pick = self
                    .unlinked_tasks
                    .iter()
                    .position(|t| !t.1.is_empty() && t.1 == prompt)
                    .or_else(|| (!self.unlinked_tasks.is_empty()).then_some(0));
                let (parent, parent_turn) = match pick.map(|i| self.unlinked_tasks.remove(i)) {
                    Some((call, _, s, t)) => {
                        self.task_chain.insert(call, session.clone());
                        (s, t)
                    }
                    None => (self.root().to_string(), None),
                };
                self.push(
                    out,
                    0,
                    &session,
                    None,
                    "session/start",
                    json!({ "parent": parent, "parent_turn": parent_turn, "sidechain": true }),
                );
                session
            }
        };
        if !uuid.is_empty() {
            self.chain_of.insert(uuid.to_string(), session.clone());
        }
        self.last_chain = Some(session.clone());
        session
    }

    /// Records read before the file named its session and time.
    fn release_held(&mut self, out: &mut Vec<Event>) {
        for (line, record) in std::mem::take(&mut self.held) {
            let session = self
                .file_session
                .clone()
                .unwrap_or_else(|| match &self.path_root {
                    Some((_, agent)) => format!("{}/{agent}", self.root()),
                    None => self.root().to_string(),
                });
            let raw_type = record
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("record")
                .to_string();
            let mut data = Value::Object(record);
            flag(&mut data, "ts_synthetic");
            let kind = unmapped(Format::ClaudeCode, &raw_type);
            self.push(out, line, &session, None, &kind, data);
        }
    }
}

impl Importer for ClaudeCodeImporter {
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let record = Unmapped::parse(line)?;
        let ts = record
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339);
        let sid = record
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|s| !super::is_placeholder(Some(s)));
        if self.root.is_none() {
            match (sid, ts) {
                (Some(sid), Some(_)) => {
                    let root = self.path_root.as_ref().map_or(sid, |(p, _)| p.as_str());
                    self.root = Some(root.to_string());
                    self.clock(ts);
                    self.release_held(out);
                }
                _ => {
                    self.held.push((line_no, record));
                    return Ok(());
                }
            }
        }
        self.record(out, line_no, ts, record);
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.release_held(out);
        let mut sessions: Vec<String> = self.sessions.keys().cloned().collect();
        sessions.sort();
        for s in sessions {
            self.flush_msg(out, &s);
            // The end of the file ends a finished turn (a subagent's ends with its Task).
            if !self.sessions.get(&s).is_some_and(|x| x.agent) {
                self.settle(out, &s);
            }
        }
    }
}

/// Whether a subagent file's agent id names a context fork rather than a Task subagent:
/// `aside_question-<id>` (a `/btw` side question) or `acompact-<id>` (a compaction).
fn is_context_fork(agent: &str) -> bool {
    agent.starts_with("aside_question-") || agent.starts_with("acompact-")
}

/// `(parent sessionId, agent id)` of a file at `…/<sessionId>/subagents/agent-<id>.jsonl`.
fn subagent_path(rel: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = rel.split(['/', '\\']).collect();
    let n = parts.len();
    if n < 3 || parts[n - 2] != "subagents" {
        return None;
    }
    let stem = parts[n - 1].strip_suffix(".jsonl").unwrap_or(parts[n - 1]);
    let agent = stem.strip_prefix("agent-").unwrap_or(stem);
    (!parts[n - 3].is_empty() && !agent.is_empty())
        .then(|| (parts[n - 3].to_string(), agent.to_string()))
}

/// The Error of a `system` `api_error` or an `error` record: the provider's error nested in
/// `error` (`{status, error: {type: "error", error: {type, message}}}`, or a bare
/// `{type, message}` / string), the HTTP status from `error.status` / `apiErrorStatus`,
/// the code by table E, else by the status ([`super::status_error_code`]).
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
        .and_then(|r| super::canonical_error_code(Format::ClaudeCode, r))
        .is_some();
    if !listed {
        if let Some(code) = err["details"]["http_status"]
            .as_i64()
            .and_then(super::status_error_code)
        {
            err["code"] = json!(code);
        }
    }
    err
}

/// An AWS-style error object (`{"__type": "<namespace>#<Name>", "message"|"Message": …}`):
/// the Error with `<Name>` as raw code. `None` when the object has no `__type`.
fn aws_error(v: &Value) -> Option<Value> {
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
fn content_text(content: Option<&Value>) -> String {
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
fn api_error(text: &str, error_field: Option<&str>, status_field: Option<i64>) -> Value {
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
    let listed =
        body_type.is_some_and(|t| super::canonical_error_code(Format::ClaudeCode, t).is_some());
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

/// The code a failure text without HTTP status names: a timeout, or a lost connection.
fn text_error_code(text: &str) -> Option<&'static str> {
    let t = text.to_ascii_lowercase();
    if t.contains("timed out") || t.contains("timeout") {
        Some("completion_timed_out")
    } else if t.contains("connection") || t.contains("stalled") || t.contains("socket") {
        Some("completion_failed")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    #[test]
    fn api_error_text_gives_code_status_and_raw_code() {
        let e = api_error(
            r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":null}"#,
            None,
            None,
        );
        assert_eq!(e["code"], "completion_unavailable");
        assert_eq!(e["details"]["http_status"], 529);
        assert_eq!(e["details"]["raw_code"], "overloaded_error");
        assert_eq!(e["message"], "Overloaded");
        // No status: the text decides.
        let e = api_error("API Error: Request timed out.", None, None);
        assert_eq!(e["code"], "completion_timed_out");
        assert_eq!(e["message"], "API Error: Request timed out.");
        // Claude Code 2.1.x: a prefix before `API Error:`, the class in the `error` field.
        let e = api_error(
            "Please run /login · API Error: 403 Request not allowed",
            Some("authentication_failed"),
            Some(403),
        );
        assert_eq!(e["code"], "completion_unauthorized");
        assert_eq!(e["details"]["http_status"], 403);
        assert_eq!(e["details"]["raw_code"], "authentication_failed");
        // A spent plan quota is billing, not a per-minute rate.
        let e = api_error(
            "You've hit your session limit · resets 8:10pm (Europe/Zagreb)",
            Some("rate_limit"),
            Some(429),
        );
        assert_eq!(e["code"], "completion_billing_denied");
        assert_eq!(e["details"]["http_status"], 429);
        let e = api_error("API Error: 429 slow down", Some("rate_limit"), None);
        assert_eq!(e["code"], "completion_rate_limited");
        let e = api_error("Credit balance is too low", Some("billing_error"), None);
        assert_eq!(e["code"], "completion_billing_denied");
        // `unknown`: the status decides.
        let e = api_error("API Error: 529 Overloaded.", Some("unknown"), None);
        assert_eq!(e["code"], "completion_unavailable");
        assert_eq!(e["details"]["http_status"], 529);
        assert_eq!(e["details"]["raw_code"], "unknown");
    }

    fn run(lines: &[&str]) -> Vec<Event> {
        let (evs, rejected) = feed(&mut ClaudeCodeImporter::new(&context("s.jsonl")), lines);
        assert!(rejected.is_empty(), "lines rejected: {rejected:?}");
        evs
    }

    #[test]
    fn api_error_line_is_a_model_error_and_time_never_runs_back() {
        let evs = run(&[
            r#"{"type":"summary","summary":"x"}"#,
            r#"{"type":"user","sessionId":"s","uuid":"u1","isSidechain":false,"timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"assistant","sessionId":"s","uuid":"a1","isSidechain":false,"timestamp":"2026-01-01T00:00:01Z","isApiErrorMessage":true,"message":{"id":"x","content":[{"type":"text","text":"API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow\"}}"}]}}"#,
        ]);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        // Claude Code gave up on the call: the turn ends failed where the message is.
        assert_eq!(
            kinds,
            [
                "claude-code:summary",
                "inbox/receipt",
                "turn/start",
                "model/end",
                "turn/end",
                "agent/idle"
            ]
        );
        let end: Value = serde_json::from_str(&evs[4].data).unwrap();
        assert_eq!(end["reason"]["kind"], "error");
        assert_eq!(end["reason"]["error"]["code"], "completion_rate_limited");
        assert!(evs.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert_eq!(evs[0].line, 1);
        let d: Value = serde_json::from_str(&evs[3].data).unwrap();
        assert_eq!(d["error"]["code"], "completion_rate_limited");
        assert_eq!(evs[3].turn.as_deref(), Some("u1"));
    }

    #[test]
    fn a_subagent_file_is_one_session_whatever_its_records_name() {
        let rel = "s/subagents/agent-aside_question-9f8e.jsonl";
        let lines = [
            r#"{"type":"file-history-snapshot","messageId":"x"}"#,
            r#"{"type":"user","sessionId":"s","agentId":"a1","uuid":"q0","isSidechain":true,"isMeta":true,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"replayed"}}"#,
            r#"{"type":"user","sessionId":"s","uuid":"q1","isSidechain":true,"timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"which is largest?"}}"#,
            r#"{"type":"assistant","sessionId":"s","uuid":"q2","isSidechain":true,"timestamp":"2026-01-01T00:00:03Z","message":{"id":"m","content":[{"type":"text","text":"README"}]}}"#,
        ];
        let (evs, rejected) = feed(&mut ClaudeCodeImporter::new(&context(rel)), &lines);
        assert!(rejected.is_empty());
        assert!(
            evs.iter().all(|e| e.session == "s/aside_question-9f8e"),
            "{:?}",
            evs.iter().map(|e| &e.session).collect::<Vec<_>>()
        );
        // A context fork's turn ends at the end of its file (no Task result ends it).
        assert_eq!(evs.last().map(|e| e.kind.as_str()), Some("turn/end"));
    }

    #[test]
    fn a_local_command_and_its_synthetic_answer_open_no_turn() {
        let evs = run(&[
            r#"{"type":"user","sessionId":"s","uuid":"c1","isSidechain":false,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"<command-name>/login</command-name>"}}"#,
            r#"{"type":"assistant","sessionId":"s","uuid":"c2","isSidechain":false,"timestamp":"2026-01-01T00:00:02Z","isApiErrorMessage":true,"error":"authentication_failed","message":{"model":"<synthetic>","content":[{"type":"text","text":"Not logged in · Please run /login"}]}}"#,
        ]);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["claude-code:user", "claude-code:assistant"]);
    }

    #[test]
    fn main_transcript_links_its_task_subagent() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/samples/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let evs = run(&lines);
        let sid = "258c7280-ae70-4798-800f-63464d01a85d";
        let child = format!("{sid}/a881341");
        let starts: Vec<&Event> = evs.iter().filter(|e| e.kind == "session/start").collect();
        assert_eq!(starts.len(), 1);
        assert_eq!(starts[0].session, child);
        assert_eq!(starts[0].root, sid);
        assert_eq!(starts[0].line, 1474); // the first agent_progress
        let d: Value = serde_json::from_str(&starts[0].data).unwrap();
        assert_eq!(d["parent"], sid);
        // The Task tool_use (line 1473) is in the turn opened by line 496.
        assert_eq!(d["parent_turn"], "0a5857c1-7c3d-4165-b520-c7eff1cfa27a");
        // The Task's result (line 1480, toolUseResult.status "completed") ends the child's turn.
        let end = evs
            .iter()
            .find(|e| e.kind == "turn/end" && e.session == child)
            .unwrap();
        assert_eq!(end.line, 1480);
        assert_eq!(
            end.turn.as_deref(),
            Some("99c77085-8ebd-4871-bdf6-ea5801acb7c9")
        );
        assert!(evs
            .windows(2)
            .all(|w| w[0].ts <= w[1].ts && w[0].seq < w[1].seq));
    }
}
