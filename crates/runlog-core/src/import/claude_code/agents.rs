//! Subagents of a Claude Code transcript: Task subagents (their own files under
//! `subagents/`, announced by `agent_progress` records, ended by the Task's result) and the
//! inline sidechains of 1.0.x transcripts.

use serde_json::{json, Map, Value};

use super::messages::content_text;
use super::ClaudeCodeImporter;
use crate::event::Event;
use crate::import::parse_rfc3339;

impl ClaudeCodeImporter {
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

    pub(super) fn progress(
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

    /// The Task's `toolUseResult{agentId, status, content}`: the subagent's turn ended.
    pub(super) fn agent_result(
        &mut self,
        out: &mut Vec<Event>,
        agent_id: &str,
        call_id: &str,
        res: &Value,
    ) {
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

    /// The session of an inline sidechain record (1.0.x: subagents written into the main
    /// transcript, no `agentId`): each `parentUuid: null` starts a chain, its own session
    /// `<sessionId>/<uuid of its first record>`; later records follow their parent's chain.
    /// A new chain is the subagent of a pending Task call (the one whose prompt it repeats,
    /// else the oldest): its `session/start` names that call's turn.
    pub(super) fn chain_session(
        &mut self,
        out: &mut Vec<Event>,
        record: &Map<String, Value>,
    ) -> String {
        let uuid = record.get("uuid").and_then(Value::as_str).unwrap_or("");
        let parent = record.get("parentUuid").and_then(Value::as_str);
        let known = parent.and_then(|p| self.chain_of.get(p)).cloned();
        let session = match (parent, known) {
            (_, Some(s)) => s,
            (Some(_), None) if self.last_chain.is_some() => self.last_chain.clone().unwrap(),
            _ => {
                let id = crate::import::id_or(Some(uuid), &format!("{}:sidechain", self.rel));
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
}

/// Whether a subagent file's agent id names a context fork rather than a Task subagent:
/// `aside_question-<id>` (a `/btw` side question) or `acompact-<id>` (a compaction).
pub(super) fn is_context_fork(agent: &str) -> bool {
    agent.starts_with("aside_question-") || agent.starts_with("acompact-")
}

/// `(parent sessionId, agent id)` of a file at `…/<sessionId>/subagents/agent-<id>.jsonl`.
pub(super) fn subagent_path(rel: &str) -> Option<(String, String)> {
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
