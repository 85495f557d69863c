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

mod agents;
mod errors;
mod messages;

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::{
    event, flag, parse_rfc3339, token_count, unmapped, usage_disjoint, FileContext, Format,
    Importer, Unmapped,
};
use crate::event::Event;
use crate::import::Payloads;
use agents::{is_context_fork, subagent_path};

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
    payloads: Payloads,
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
            payloads: Payloads::of(ctx),
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
        let data = self.payloads.data(kind, data);
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

#[cfg(test)]
mod tests;
