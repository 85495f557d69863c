//! Owned run intervals (docs/semantics.md §2): opened by a root-session receipt, closed by
//! an idle, and the counts of the events in between.

use super::*;

impl Reducer {
    /// Interval boundaries and counts: a root receipt opens an interval if none is open, an
    /// idle closes it; any other event counts on the open interval. Whether the event opened
    /// an interval, and whether it closed one.
    #[inline]
    pub(super) fn interval_bounds(
        &mut self,
        ev: &Event,
        kind: Kind,
        is_root_session: bool,
    ) -> (bool, bool) {
        let mut boundary = false;
        let (mut opened, mut closed) = (false, false);
        match kind {
            Kind::InboxReceipt if is_root_session && self.open_interval.is_none() => {
                self.open_interval_at(ev);
                opened = true;
                boundary = true;
            }
            Kind::AgentIdle => {
                boundary = true;
                closed = self.close_interval_at(ev);
            }
            _ => {}
        }
        if !boundary {
            if let Some(k) = self.open_interval {
                let iv = &mut self.intervals[k];
                match kind {
                    Kind::InboxReceipt if is_root_session => iv.joined_messages += 1,
                    Kind::TurnStart => iv.turns += 1,
                    Kind::ToolCall => iv.tool_calls += 1,
                    Kind::TurnBusy => iv.busy += 1,
                    Kind::TurnConflict => iv.conflicts += 1,
                    _ => {}
                }
            }
        }
        (opened, closed)
    }

    /// Opens an interval at a root-session receipt.
    #[inline]
    fn open_interval_at(&mut self, ev: &Event) {
        let seq = ev.seq;
        self.intervals.push(IntervalRow {
            root: self.root.clone(),
            open_seq: seq as i64,
            close_seq: None,
            opened_at: ev.ts,
            closed_at: None,
            status: "unsettled",
            finish_reason: None,
            finish_class: None,
            protocol_error: None,
            message_id: string_of(ev, members(ev, keys::RECEIPT)[0]),
            joined_messages: 0,
            turns: 0,
            model_calls: 0,
            errors: 0,
            tool_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            busy: 0,
            conflicts: 0,
            seq_gaps: 0,
            inferred: false,
        });
        self.open_interval = Some(self.intervals.len() - 1);
        self.last_root_end = None;
    }

    /// Closes the open interval at an idle (settled, or a protocol error when its last root
    /// turn end had no string kind); an idle with none open is stray. Whether it closed one.
    #[inline]
    fn close_interval_at(&mut self, ev: &Event) -> bool {
        let seq = ev.seq;
        match self.open_interval.take() {
            Some(k) => {
                let iv = &mut self.intervals[k];
                iv.close_seq = Some(seq as i64);
                iv.closed_at = Some(ev.ts);
                iv.inferred = std::mem::take(&mut self.last_root_end_inferred) || data_inferred(ev);
                match self.last_root_end.take() {
                    Some((s, None)) => {
                        iv.status = "protocol_error";
                        iv.protocol_error = Some(s as i64);
                    }
                    Some((_, Some((k, class)))) => {
                        iv.status = "settled";
                        iv.finish_reason = Some(k);
                        iv.finish_class = Some(class);
                    }
                    None => iv.status = "settled",
                }
                true
            }
            None => {
                self.stray_idles += 1;
                false
            }
        }
    }
}
