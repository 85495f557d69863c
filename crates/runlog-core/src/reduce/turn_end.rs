//! A turn's end: its state (docs/semantics.md §3), finish class and text, the callbacks it
//! closes and the model errors it recovers from or not.

use super::*;

impl Reducer {
    pub(super) fn turn_end(&mut self, ev: &Event, turn_idx: Option<usize>, is_root_session: bool) {
        let seq = ev.seq;
        let [reason, text, output, output_error] = members(ev, keys::TURN_END);
        let [kind, cause, inner_reason, error] = reason.map_or([None; 4], |r| {
            r.fields(["kind", "cause", "reason", "error"])
        });
        let kind = string_of(ev, kind);
        let mut fclass = kind.as_deref().map(|k| {
            let cause = cause.and_then(Raw::as_str);
            finish_class(k, cause.as_deref()).as_str()
        });
        let inferred = data_inferred(ev);
        if is_root_session && self.open_interval.is_some() {
            self.last_root_end = Some((seq, kind.clone().zip(fclass)));
            self.last_root_end_inferred = inferred;
        }
        let class = kind.as_deref().map(end_class);
        let text_len = ev.index.text_chars(&ev.data);
        let text = if self.keep_detail {
            text.and_then(Raw::string)
        } else {
            None
        };
        if class == Some(EndClass::Failed) {
            self.record_error(ev, "turn", error);
        }
        let Some(t) = turn_idx else {
            return;
        };
        if self.turns[t].end.is_some() {
            return; // The first end of a turn decides its state.
        }
        let end = match (class, kind) {
            (None, _) | (_, None) => TurnEnd::Malformed,
            (Some(EndClass::Completed(with_reason)), Some(k)) => {
                let output = if self.keep_detail {
                    let out = match output {
                        Some(o) => o.to_value(),
                        None => Value::String(text.clone().unwrap_or_default()),
                    };
                    Some(match output_error {
                        Some(err) => {
                            let raw = output.map_or(Value::Null, Raw::to_value);
                            json!({"invalid": {"raw": raw, "error": err.to_value()}})
                        }
                        None => out,
                    })
                } else {
                    None
                };
                TurnEnd::Completed {
                    stop_reason: with_reason.then_some(k),
                    text,
                    output,
                }
            }
            (Some(EndClass::Interrupted), Some(k)) => {
                let cancelled_session = self
                    .sessions
                    .get(ev.session.as_str())
                    .and_then(|s| s.cancelled_at)
                    .is_some_and(|c| c > self.turns[t].start_seq && c < seq);
                let cause = string_of(ev, cause)
                    .or_else(|| string_of(ev, inner_reason.and_then(|r| r.get("kind"))))
                    .unwrap_or_else(|| {
                        if is_cancel_kind(&k) || cancelled_session {
                            "cancelled".into()
                        } else {
                            "interrupted".into()
                        }
                    });
                // The turn's class reads its state too: an Interrupted turn whose cause is
                // `cancelled` (said so, or it ended with its cancelled session) was cancelled.
                if &*cause == "cancelled" {
                    fclass = Some(FinishClass::Cancelled.as_str());
                }
                TurnEnd::Interrupted { cause }
            }
            (Some(EndClass::Failed), Some(_)) => TurnEnd::Failed {
                error: error.map(|e| e.text().to_string()),
                code: string_of(ev, error.and_then(|e| e.get("code"))),
                text,
            },
            (Some(EndClass::Unknown), Some(k)) => TurnEnd::Unknown {
                outcome: k,
                raw: if self.keep_detail {
                    reason.map(|r| r.text().to_string())
                } else {
                    None
                },
                text,
            },
        };
        let completed = matches!(end, TurnEnd::Completed { .. });
        let ts = &mut self.turns[t];
        ts.end = Some(end);
        ts.end_inferred = inferred;
        ts.end_class = fclass;
        ts.end_seq = Some(seq);
        ts.end_text_len = text_len;
        let opened = ts.opened_callbacks.clone();
        let model_errors = ts.model_errors.clone();
        for cb in opened {
            self.close_callback(cb, seq, "turn_end");
        }
        for e in model_errors {
            self.errors[e].recovered = Some(completed);
        }
    }
}
