//! From the reducer's state to table rows: a turn's row, an agent's row, and the rows of
//! one agent handed over as [`Derived`] (at the end, or as a snapshot while it runs).

use super::*;

impl Reducer {
    fn turn_row(&self, t: &TurnState) -> TurnRow {
        let mut row = TurnRow {
            root: self.root.clone(),
            session: t.session.clone(),
            turn: t.turn.clone(),
            is_root: t.is_root,
            interval_open_seq: t.interval_open_seq,
            start_seq: t.start_seq as i64,
            end_seq: t.end_seq.map(|s| s as i64),
            state: None,
            stop_reason: None,
            cause: None,
            outcome: None,
            error_code: None,
            text_len: None,
            tool_calls: t.tool_call_count,
            model_calls: t.model_calls,
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            protocol_error: None,
            finish_class: t.end.as_ref().and(t.end_class),
            inferred: t.end.is_some() && t.end_inferred,
        };
        match &t.end {
            None => {
                row.state = Some(if t.open_callbacks.is_empty() {
                    "Running"
                } else {
                    "Blocked"
                });
                row.text_len = Some(t.delta_chars);
            }
            Some(TurnEnd::Completed { stop_reason, .. }) => {
                row.state = Some("Completed");
                row.stop_reason = stop_reason.clone();
                row.text_len = t.end_text_len;
            }
            Some(TurnEnd::Interrupted { cause }) => {
                row.state = Some("Interrupted");
                row.cause = Some(cause.clone());
                row.text_len = Some(t.delta_chars);
            }
            Some(TurnEnd::Failed { code, .. }) => {
                row.state = Some("Failed");
                row.error_code = code.clone();
                row.text_len = t.end_text_len;
            }
            Some(TurnEnd::Unknown { outcome, .. }) => {
                row.state = Some("UnknownOutcome");
                row.outcome = Some(outcome.clone());
                row.text_len = t.end_text_len;
            }
            Some(TurnEnd::Malformed) => {
                row.protocol_error = t.end_seq.map(|s| s as i64);
            }
        }
        row
    }

    /// The rows of every table as of the current cursor.
    pub fn snapshot(&self) -> Derived {
        let mut tool_calls = self.tool_calls.clone();
        join_tool_results(&self.tool_results, &mut tool_calls);
        let mut runs = self.runs.clone();
        self.mark_provisional_tails(&mut runs);
        Derived {
            intervals: self.intervals.clone(),
            turns: self.turns.iter().map(|t| self.turn_row(t)).collect(),
            errors: self.errors.clone(),
            tool_calls,
            callbacks: self.callbacks.clone(),
            runs,
            agents: self.agent_row().into_iter().collect(),
        }
    }

    /// The rows of every table: the end of the log. Like [`Reducer::snapshot`], but moves
    /// the rows out instead of copying them.
    pub fn finish(mut self) -> Derived {
        let mut tool_calls = std::mem::take(&mut self.tool_calls);
        join_tool_results(&self.tool_results, &mut tool_calls);
        let mut runs = std::mem::take(&mut self.runs);
        self.mark_provisional_tails(&mut runs);
        Derived {
            turns: self.turns.iter().map(|t| self.turn_row(t)).collect(),
            agents: self.agent_row().into_iter().collect(),
            intervals: self.intervals,
            errors: self.errors,
            tool_calls,
            callbacks: self.callbacks,
            runs,
        }
    }

    /// Appends the rows of every table to `out`, as [`Reducer::finish`] gives them, leaving
    /// this reducer's tables empty (with their room) for [`Reducer::renew`].
    pub(super) fn finish_into(&mut self, out: &mut Derived) {
        join_tool_results(&self.tool_results, &mut self.tool_calls);
        let mut runs = std::mem::take(&mut self.runs);
        self.mark_provisional_tails(&mut runs);
        out.turns
            .extend(self.turns.iter().map(|t| self.turn_row(t)));
        out.agents.extend(self.agent_row());
        out.intervals.append(&mut self.intervals);
        out.errors.append(&mut self.errors);
        out.tool_calls.append(&mut self.tool_calls);
        out.callbacks.append(&mut self.callbacks);
        out.runs.append(&mut runs);
        self.runs = runs;
    }

    /// Makes this reducer a new one for the agent `root` ([`Reducer::new`]), keeping the
    /// room of its tables and maps: every field is the new reducer's, and the recycled
    /// ones are emptied.
    pub(super) fn renew(&mut self, root: Id) {
        let old = std::mem::replace(self, Reducer::with_root(root, self.keep_detail));
        let mut sessions = old.sessions;
        sessions.clear();
        let mut by_id = old.open_callbacks_by_id;
        by_id.clear();
        self.sessions = sessions;
        self.open_callbacks_by_id = by_id;
        self.turns = cleared(old.turns);
        self.intervals = cleared(old.intervals);
        self.errors = cleared(old.errors);
        self.tool_calls = cleared(old.tool_calls);
        self.tool_results = cleared(old.tool_results);
        self.callbacks = cleared(old.callbacks);
        self.callback_blocks = cleared(old.callback_blocks);
        self.runs = cleared(old.runs);
        self.run_track = cleared(old.run_track);
    }

    fn mark_provisional_tails(&self, runs: &mut [RunRow]) {
        for (row, tr) in runs.iter_mut().zip(&self.run_track) {
            row.provisional_tail = !tr.settled && tr.last_was_delta;
        }
    }

    fn agent_row(&self) -> Option<AgentRow> {
        if self.events == 0 {
            return None;
        }
        let mut sessions: Vec<&str> = self.sessions.keys().map(Id::as_str).collect();
        for t in &self.turns {
            sessions.push(&t.session);
        }
        sessions.push(&self.root);
        sessions.sort_unstable();
        sessions.dedup();
        Some(AgentRow {
            root: self.root.clone(),
            events: self.events,
            sessions: sessions.len() as i64,
            first_seq: self.first_seq as i64,
            last_seq: self.last_seq.unwrap_or(0) as i64,
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            intervals: self.intervals.len() as i64,
            stray_idles: self.stray_idles,
            seq_gaps: self.seq_gaps,
        })
    }
}
