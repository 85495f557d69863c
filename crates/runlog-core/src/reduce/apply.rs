//! One event applied: the hot path of deltas, which touch only their turn and run attempt,
//! and the dispatch of every other event to what its family changes.

use super::*;

impl Reducer {
    fn turn_id(&mut self, session_id: &Id, turn_id: &Id, seq: u64) -> usize {
        // Most events name the turn the event before named: compare before hashing (ids
        // the reader shared compare as pointers).
        if let Some(last) = self.turns.get(self.last_turn) {
            if last.turn == *turn_id && last.session == *session_id {
                return self.last_turn;
            }
        }
        self.find_or_add_turn(session_id, turn_id, seq)
    }

    /// Applies the next event of this agent. Events must come in increasing `seq`; an
    /// event at or before the last cursor is ignored (`None`).
    pub fn apply(&mut self, ev: &Event) -> Option<Applied> {
        let seq = ev.seq;
        if let Some(last) = self.last_seq {
            if seq <= last {
                return None;
            }
        }
        let prev = self.last_seq;
        self.last_seq = Some(seq);
        if self.events == 0 {
            self.first_seq = seq;
            self.first_ts = ev.ts;
        }
        self.last_ts = ev.ts;
        self.events += 1;
        if let Some(p) = prev {
            if seq - p > 1 {
                self.seq_gaps += 1;
                if let Some(k) = self.open_interval {
                    self.intervals[k].seq_gaps += 1;
                }
            }
        }

        debug_assert!(
            ev.index == PayloadIndex::NONE || ev.index == PayloadIndex::of(&ev.kind, &ev.data),
            "the payload index of seq {seq} is not that of its type and data (changed after?)"
        );
        let kind = ev.index.kind(&ev.kind);

        // The turn this event names (refusals name no turn of their own).
        let turn_idx = match (&ev.turn, kind) {
            (_, Kind::TurnBusy) | (_, Kind::TurnConflict) => None,
            (Some(t), _) => Some(self.turn_id(&ev.session, t, seq)),
            (None, _) => None,
        };
        let turn = turn_idx.map(TurnId);

        // Deltas, most events, touch only their turn and the current run attempt: no
        // interval boundary or count, no payload but the text's length.
        if let Kind::TextDelta | Kind::ReasoningDelta = kind {
            // `count_on_run` for a delta, written out: calling it cost ~5 instructions per
            // event on this path.
            if let Some(i) = self.current_run {
                let row = &mut self.runs[i];
                if kind == Kind::TextDelta {
                    row.assistant_deltas += 1;
                } else {
                    row.reasoning_deltas += 1;
                }
                self.run_track[i].last_was_delta = true;
            }
            if let (Kind::TextDelta, Some(t)) = (kind, turn_idx) {
                self.text_delta(ev, t);
            }
            return Some(Applied {
                cursor: seq,
                turn,
                opened_interval: false,
                closed_interval: false,
            });
        }
        // The boundaries come back by value and `Applied` is built here, in the caller's
        // slot: filled in place across the call, its fields were written by separate stores
        // and read back as one wider copy, which stalled (perf: ~9% of the reducer's time on
        // that copy).
        let (opened_interval, closed_interval) = self.apply_other(ev, kind, turn_idx);
        Some(Applied {
            cursor: seq,
            turn,
            opened_interval,
            closed_interval,
        })
    }

    /// A `text/delta` of turn `t`: its length counts on the turn until the turn ends.
    fn text_delta(&mut self, ev: &Event, t: usize) {
        let ts = &mut self.turns[t];
        if ts.end.is_none() {
            if let Some(n) = ev.index.text_chars(&ev.data) {
                ts.delta_chars += n;
                if self.keep_detail {
                    let [text] = members(ev, keys::DELTA);
                    let text = text.and_then(Raw::as_str);
                    ts.delta_text.push_str(&text.unwrap_or_default());
                }
            }
        }
    }

    /// [`Reducer::apply`] of an event that is not a delta: whether it opened an interval,
    /// and whether it closed one.
    #[inline(never)]
    fn apply_other(&mut self, ev: &Event, kind: Kind, turn_idx: Option<usize>) -> (bool, bool) {
        // Interval boundaries and counts. Only receipts and turn ends ask whether the
        // event is the root session's.
        let is_root_session =
            matches!(kind, Kind::InboxReceipt | Kind::TurnEnd) && ev.session == self.root;
        let (opened, closed) = self.interval_bounds(ev, kind, is_root_session);

        // Run attempts: count the event on the attempt it falls in.
        if self.current_run.is_some()
            || matches!(
                kind,
                Kind::RunStarted | Kind::RunCompleted | Kind::RunFailed | Kind::RunCancelled
            )
        {
            self.track_run(ev, kind);
        }

        match kind {
            Kind::SessionStart => self.session_start(ev),
            Kind::SessionEnd => self.session_end(ev),
            Kind::TurnStart => self.turn_start(ev, turn_idx),
            Kind::ModelEnd => self.model_end(ev, turn_idx),
            Kind::TurnEnd => self.turn_end(ev, turn_idx, is_root_session),
            Kind::ToolCall => self.tool_call(ev, turn_idx),
            Kind::ToolResult => self.tool_result(ev),
            Kind::CallbackOpen => self.callback_open(ev, turn_idx),
            Kind::CallbackAnswer => self.callback_answer(ev),
            Kind::RunFailed => {
                let [_, _, _, e] = members(ev, keys::RUN_SETTLED);
                self.record_error(ev, "run", e);
            }
            _ => {}
        }
        (opened, closed)
    }
}
