//! Run attempts (docs/semantics.md §5): `run/*` events open and settle attempts, and every
//! other event counts by voice on the attempt it falls in.

use super::*;

impl Reducer {
    pub(super) fn track_run(&mut self, ev: &Event, kind: Kind) {
        match kind {
            Kind::RunStarted => {
                let [run_id, attempt] = members(ev, keys::RUN_STARTED);
                let run_id = run_id.and_then(Raw::string);
                let attempt = attempt.and_then(Raw::as_i64);
                self.runs.push(RunRow {
                    root: self.root.clone(),
                    run_id,
                    attempt,
                    start_seq: ev.seq as i64,
                    settle_seq: None,
                    settle: "unsettled",
                    output_status: None,
                    wait_for_kind: None,
                    assistant_text_len: None,
                    provisional_tail: false,
                    error_code: None,
                    assistant_deltas: 0,
                    reasoning_deltas: 0,
                    progress_events: 0,
                    tool_events: 0,
                    log_events: 0,
                    interaction_events: 0,
                });
                self.run_track.push(RunTrack::default());
                self.current_run = Some(self.runs.len() - 1);
            }
            Kind::RunCompleted | Kind::RunFailed | Kind::RunCancelled => {
                // Whatever attempt it settles (maybe another, or none), this event is the
                // current attempt's last so far, and it is not a delta (§5).
                if let Some(c) = self.current_run {
                    self.run_track[c].last_was_delta = false;
                }
                let [run_id, attempt, output, error] = members(ev, keys::RUN_SETTLED);
                let run_id = run_id.and_then(Raw::as_str);
                let attempt = attempt.and_then(Raw::as_i64);
                let found = (0..self.runs.len()).rev().find(|&i| {
                    !self.run_track[i].settled
                        && self.runs[i].run_id.as_deref() == run_id.as_deref()
                        && (attempt.is_none() || self.runs[i].attempt == attempt)
                });
                let Some(i) = found else {
                    return;
                };
                self.run_track[i].settled = true;
                let row = &mut self.runs[i];
                row.settle_seq = Some(ev.seq as i64);
                match kind {
                    Kind::RunCompleted => {
                        row.settle = "completed";
                        let [status, wait_for, text] = output.map_or([None; 3], |o| {
                            o.fields(["status", "waitFor", "assistantText"])
                        });
                        row.output_status = status.and_then(Raw::string);
                        row.wait_for_kind =
                            wait_for.and_then(|w| w.get("kind")).and_then(Raw::string);
                        row.assistant_text_len = text.and_then(Raw::char_len);
                    }
                    Kind::RunFailed => {
                        row.settle = "failed";
                        row.error_code = error.and_then(|e| e.get("code")).and_then(Raw::string);
                    }
                    _ => row.settle = "cancelled",
                }
                if self.current_run == Some(i) {
                    self.current_run = None;
                }
            }
            _ => self.count_on_run(ev, kind),
        }
    }

    /// Counts an event that is not a run event on the current attempt, if one is open.
    fn count_on_run(&mut self, ev: &Event, kind: Kind) {
        let Some(i) = self.current_run else {
            return;
        };
        let row = &mut self.runs[i];
        // Counted by voice (docs/semantics.md §5, §6), so every type of a voice counts.
        match Voice::of_kind(kind, &ev.kind) {
            Voice::Assistant => row.assistant_deltas += 1,
            Voice::Reasoning => row.reasoning_deltas += 1,
            Voice::Progress => row.progress_events += 1,
            Voice::Log => row.log_events += 1,
            Voice::Tool => row.tool_events += 1,
            Voice::Interaction => row.interaction_events += 1,
            _ => {}
        }
        self.run_track[i].last_was_delta = matches!(kind, Kind::TextDelta | Kind::ReasoningDelta);
    }
}
