//! Finding an event's turn (looked through for a few turns, indexed past that) and the
//! callbacks that block turns up the spawn tree.

use super::*;

impl Reducer {
    /// [`Reducer::turn_id`] of a turn other than the last event's.
    #[inline(never)]
    pub(super) fn find_or_add_turn(&mut self, session_id: &Id, turn_id: &Id, seq: u64) -> usize {
        let (session, turn) = (session_id.as_str(), turn_id.as_str());
        if let Some(i) = self.lookup_turn(session, turn) {
            self.last_turn = i;
            return i;
        }
        self.last_turn = self.turns.len();
        let i = self.turns.len();
        room(&mut self.turns, 8);
        self.turns.push(TurnState {
            session: session_id.clone(),
            turn: turn_id.clone(),
            is_root: session == self.root,
            interval_open_seq: self.open_interval.map(|k| self.intervals[k].open_seq),
            start_seq: seq,
            has_start: false,
            end_seq: None,
            end: None,
            end_inferred: false,
            end_class: None,
            delta_chars: 0,
            end_text_len: None,
            delta_text: String::new(),
            open_callbacks: Vec::new(),
            opened_callbacks: Vec::new(),
            tool_call_count: 0,
            tool_calls: Vec::new(),
            model_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            pending_model_errors: Vec::new(),
            model_errors: Vec::new(),
        });
        if self.turns.len() > TURNS_LOOKED_THROUGH {
            // Index every turn the first time, then each new one.
            let first = if self.turn_index.is_empty() { 0 } else { i };
            for t in first..=i {
                let (session, turn) = (&self.turns[t].session, &self.turns[t].turn);
                match self.turn_index.get_mut(session.as_str()) {
                    Some(turns) => {
                        turns.insert(turn.clone(), t);
                    }
                    None => {
                        let mut turns = HashMap::default();
                        turns.insert(turn.clone(), t);
                        self.turn_index.insert(session.clone(), turns);
                    }
                }
            }
        }
        // A turn first named after a session/start named it as its spawner: the callbacks
        // already open in that subtree block it too (docs/semantics.md §3).
        if self
            .sessions
            .values()
            .any(|s| s.parent.as_deref() == Some(session) && s.parent_turn.as_deref() == Some(turn))
        {
            self.relink_open_callbacks();
        }
        i
    }

    /// Adds the turns up the spawn chain that open callbacks do not block yet (the chain
    /// grew after they opened), keeping each turn's open callbacks in opening order.
    pub(super) fn relink_open_callbacks(&mut self) {
        for cb in 0..self.callbacks.len() {
            if self.callbacks[cb].closed_by.is_some() {
                continue;
            }
            let session = self.callbacks[cb].session.clone();
            let opener = self.callbacks[cb]
                .turn
                .as_deref()
                .and_then(|t| self.lookup_turn(&session, t));
            for t in self.blocked_turns(&session, opener) {
                if !self.callback_blocks[cb].contains(&t) {
                    self.callback_blocks[cb].push(t);
                    self.turns[t].open_callbacks.push(cb);
                    self.turns[t].open_callbacks.sort_unstable();
                }
            }
        }
    }

    fn lookup_turn(&self, session: &str, turn: &str) -> Option<usize> {
        if self.turns.len() <= TURNS_LOOKED_THROUGH {
            // Each (session, turn) has one TurnState.
            return self
                .turns
                .iter()
                .position(|t| t.turn.as_str() == turn && t.session.as_str() == session);
        }
        self.turn_index.get(session)?.get(turn).copied()
    }

    pub(super) fn close_callback(&mut self, cb: usize, seq: u64, by: &'static str) {
        if self.callbacks[cb].closed_by.is_some() {
            return;
        }
        self.callbacks[cb].close_seq = Some(seq as i64);
        self.callbacks[cb].closed_by = Some(by);
        for &t in &self.callback_blocks[cb] {
            self.turns[t].open_callbacks.retain(|&c| c != cb);
        }
        if let Some(id) = &self.callbacks[cb].callback_id {
            if let Some(v) = self.open_callbacks_by_id.get_mut(id) {
                v.retain(|&c| c != cb);
                if v.is_empty() {
                    self.open_callbacks_by_id.remove(id);
                }
            }
        }
    }

    /// The turns a callback opened in (`session`, `turn`) blocks: the opening turn, then the
    /// turn that spawned the session, and so on up the tree.
    pub(super) fn blocked_turns(&self, session: &str, turn: Option<usize>) -> Vec<usize> {
        let mut out: Vec<usize> = turn.into_iter().collect();
        let mut s = session;
        for _ in 0..256 {
            let Some(info) = self.sessions.get(s) else {
                break;
            };
            let (Some(p), pt) = (info.parent.as_deref(), info.parent_turn.as_deref()) else {
                break;
            };
            if let Some(pt) = pt {
                if let Some(t) = self.lookup_turn(p, pt) {
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
            if p == s {
                break;
            }
            s = p;
        }
        out
    }
}
