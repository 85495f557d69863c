//! What each family of events changes besides intervals and run attempts: sessions, turn
//! starts, model calls and their errors, tool calls and results, callbacks.

use super::*;

impl Reducer {
    pub(super) fn record_error(
        &mut self,
        ev: &Event,
        source: &'static str,
        e: Option<Raw>,
    ) -> usize {
        let f = error_fields(e);
        let expected = rules::retryable_expected(
            f.code.as_deref(),
            f.http_status,
            f.details_reason.as_deref(),
        );
        let i = self.errors.len();
        self.errors.push(ErrorRow {
            root: self.root.clone(),
            session: ev.session.clone(),
            turn: ev.turn.clone(),
            seq: ev.seq as i64,
            ts: ev.ts,
            source,
            status_consistent: rules::status_consistent(f.code.as_deref(), f.http_status),
            retryable_mismatch: expected.map(|x| x != f.retryable),
            retryable_expected: expected,
            code: f.code,
            message: f.message,
            retryable: f.retryable,
            http_status: f.http_status,
            details_reason: f.details_reason,
            retried: if source == "model" { Some(false) } else { None },
            recovered: if source == "model" { Some(false) } else { None },
        });
        if let Some(k) = self.open_interval {
            self.intervals[k].errors += 1;
        }
        i
    }

    /// A `session/start`: the session's parent and spawning turn; open callbacks may now block
    /// more turns.
    #[inline]
    pub(super) fn session_start(&mut self, ev: &Event) {
        let [parent, parent_turn] = members(ev, keys::SESSION_START);
        let info = self.sessions.entry(ev.session.clone()).or_default();
        info.parent = parent.and_then(Raw::string);
        info.parent_turn = parent_turn.and_then(Raw::string);
        self.relink_open_callbacks();
    }

    /// A `session/end`: a cancelled session's end seq (its interrupted turns were cancelled).
    #[inline]
    pub(super) fn session_end(&mut self, ev: &Event) {
        let seq = ev.seq;
        let [status] = members(ev, keys::SESSION_END);
        let status = status.and_then(Raw::as_str);
        if status.as_deref() == Some("cancelled") {
            let info = self.sessions.entry(ev.session.clone()).or_default();
            info.cancelled_at.get_or_insert(seq);
        }
    }

    /// A `turn/start`: the turn's start and the interval it started in (its first start decides).
    #[inline]
    pub(super) fn turn_start(&mut self, ev: &Event, turn_idx: Option<usize>) {
        let seq = ev.seq;
        if let Some(t) = turn_idx {
            let open = self.open_interval.map(|k| self.intervals[k].open_seq);
            let ts = &mut self.turns[t];
            if !ts.has_start {
                ts.has_start = true;
                ts.start_seq = seq;
                ts.interval_open_seq = open;
            }
        }
    }

    /// A `model/end`: the call's tokens on the interval and turn, its error recorded; the turn's
    /// earlier model errors were retried.
    #[inline]
    pub(super) fn model_end(&mut self, ev: &Event, turn_idx: Option<usize>) {
        let [_, error, input, output] = members(ev, keys::MODEL_END);
        let input = input.and_then(Raw::as_i64).unwrap_or(0);
        let output = output.and_then(Raw::as_i64).unwrap_or(0);
        if let Some(k) = self.open_interval {
            let iv = &mut self.intervals[k];
            iv.model_calls += 1;
            iv.input_tokens += input;
            iv.output_tokens += output;
        }
        let err = if error.is_some_and(Raw::is_object) {
            Some(self.record_error(ev, "model", error))
        } else {
            None
        };
        if let Some(t) = turn_idx {
            let pending = std::mem::take(&mut self.turns[t].pending_model_errors);
            for e in pending {
                self.errors[e].retried = Some(true);
            }
            let ts = &mut self.turns[t];
            ts.model_calls += 1;
            ts.input_tokens += input;
            ts.output_tokens += output;
            if let Some(e) = err {
                ts.pending_model_errors.push(e);
                ts.model_errors.push(e);
                // After the turn's end, that end already says whether it recovered.
                if let Some(end) = &ts.end {
                    let completed = matches!(end, TurnEnd::Completed { .. });
                    self.errors[e].recovered = Some(completed);
                }
            }
        }
    }

    /// A `tool/call`: a tool call row, counted on its turn.
    #[inline]
    pub(super) fn tool_call(&mut self, ev: &Event, turn_idx: Option<usize>) {
        let seq = ev.seq;
        let [call_id, name, arguments] = members(ev, keys::TOOL_CALL);
        let i = self.tool_calls.len();
        room(&mut self.tool_calls, 16);
        self.tool_calls.push(ToolCallRow {
            root: self.root.clone(),
            session: ev.session.clone(),
            turn: ev.turn.clone(),
            call_id: string_of(ev, call_id),
            seq: seq as i64,
            name: string_of(ev, name),
            arguments: arguments
                .filter(|a| !a.is_null())
                .map(|a| ev.data.slice(a.text())),
            status: None,
            detail: None,
        });
        if let Some(t) = turn_idx {
            let ts = &mut self.turns[t];
            ts.tool_call_count += 1;
            if self.keep_detail {
                ts.tool_calls.push(i);
            }
        }
    }

    /// A `tool/result` with a call id: kept until the end, where the first of each id decides
    /// its call's status ([`join_tool_results`]).
    #[inline]
    pub(super) fn tool_result(&mut self, ev: &Event) {
        let [id, status, detail] = members(ev, keys::TOOL_RESULT);
        if let Some(call_id) = string_of(ev, id) {
            room(&mut self.tool_results, 16);
            self.tool_results.push(ToolResult {
                call_id,
                status: string_of(ev, status),
                detail: string_of(ev, detail),
            });
        }
    }

    /// A `callback/open`: a callback row, blocking its turn and the turns up the spawn tree.
    #[inline]
    pub(super) fn callback_open(&mut self, ev: &Event, turn_idx: Option<usize>) {
        let seq = ev.seq;
        let [id, cb_kind, title] = members(ev, keys::CALLBACK_OPEN);
        let i = self.callbacks.len();
        let id = id.and_then(Raw::string);
        self.callbacks.push(CallbackRow {
            root: self.root.clone(),
            session: ev.session.clone(),
            turn: ev.turn.clone(),
            callback_id: id.clone(),
            kind: cb_kind.and_then(Raw::string),
            title: title.and_then(Raw::string),
            open_seq: seq as i64,
            close_seq: None,
            closed_by: None,
        });
        let blocks = self.blocked_turns(&ev.session, turn_idx);
        for &t in &blocks {
            self.turns[t].open_callbacks.push(i);
        }
        if let Some(t) = turn_idx {
            self.turns[t].opened_callbacks.push(i);
        }
        self.callback_blocks.push(blocks);
        if let Some(id) = id {
            self.open_callbacks_by_id.entry(id).or_default().push(i);
        }
    }

    /// A `callback/answer`: closes the first open callback of its id.
    #[inline]
    pub(super) fn callback_answer(&mut self, ev: &Event) {
        let seq = ev.seq;
        let [id] = members(ev, keys::CALLBACK_ANSWER);
        let id = id.and_then(Raw::as_str);
        if let Some(id) = id {
            let open = self.open_callbacks_by_id.get(id.as_ref());
            if let Some(&cb) = open.and_then(|v| v.first()) {
                self.close_callback(cb, seq, "answer");
            }
        }
    }
}
