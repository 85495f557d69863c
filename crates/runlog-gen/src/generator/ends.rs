//! How turns end: the ending drawn for a turn, model and turn errors as providers return
//! them (the error codes of docs/semantics.md), the events that close a model call, and retries.

use std::fmt::Write as _;

use super::*;

impl Gen {
    pub(crate) fn pick_end(&mut self, root: bool) -> End {
        let class = if root {
            self.rng
                .weighted(&[(0u8, 780), (1, 80), (2, 70), (3, 45), (4, 12)])
        } else {
            self.rng
                .weighted(&[(0u8, 880), (1, 40), (2, 30), (3, 35), (4, 8)])
        };
        match class {
            0 => End::Completed(self.rng.weighted(&[
                ("completed", 90),
                ("end_turn", 5),
                ("task_complete", 3),
                ("COMPLETED", 2),
            ])),
            1 => End::Stop(self.rng.weighted(&[
                ("max_tokens", 45),
                ("refusal", 12),
                ("incomplete", 12),
                ("skipped", 10),
                ("blocked", 8),
                ("stop_sequence", 8),
                ("max-tokens", 5),
            ])),
            2 => {
                let kind = self.rng.weighted(&[
                    ("cancelled", 38),
                    ("interrupted", 25),
                    ("replaced", 12),
                    ("aborted", 10),
                    ("budget_limited", 6),
                    ("review_ended", 5),
                    ("CANCELLED", 4),
                ]);
                let cause = match self.rng.below(10) {
                    0..=4 => Cause::Given(self.rng.pick(&[
                        "user_cancel",
                        "client_disconnected",
                        "steer",
                        "timeout",
                        "shutdown",
                        "superseded",
                    ])),
                    5 => Cause::Nested(self.rng.pick(&["user_stop", "deadline", "new_message"])),
                    _ => Cause::None,
                };
                End::Interrupted {
                    kind,
                    cause,
                    session_cancel: false,
                }
            }
            3 => End::Failed {
                kind: self
                    .rng
                    .weighted(&[("error", 75), ("failed", 20), ("FAILED", 5)]),
                model: self.rng.chance(0.55),
            },
            _ => End::Unknown(self.rng.pick(&[
                "paused_for_review",
                "handoff",
                "deferred",
                "awaiting_input",
            ])),
        }
    }

    /// A model error as a provider would return it (codes of docs/semantics.md §4).
    pub(crate) fn model_error(&mut self) -> ErrSpec {
        let code = self.rng.weighted(&[
            ("completion_unavailable", 300),
            ("completion_rate_limited", 240),
            ("completion_timed_out", 120),
            ("completion_failed", 100),
            ("completion_context_too_large", 60),
            ("completion_rejected", 40),
            ("completion_unauthorized", 15),
            ("completion_billing_denied", 15),
            ("completion_failed_permanently", 15),
            ("turn_failed", 10),
            ("remote_session_failed", 8),
            ("", 10),
        ]);
        let mut e = ErrSpec {
            code: Some(code),
            message: String::new(),
            retryable: true,
            status: None,
            reason: None,
            request_id: self.rng.chance(0.4),
        };
        match code {
            "completion_unavailable" => {
                let s = self.rng.weighted(&[
                    (Some(503u16), 50),
                    (Some(502), 15),
                    (Some(500), 12),
                    (Some(529), 10),
                    (Some(504), 6),
                    (None, 5),
                    (Some(409), 2),
                ]);
                e.status = s;
                e.message = match s {
                    Some(503) => "503 Service Unavailable: the model is overloaded".into(),
                    Some(502) => "502 Bad Gateway".into(),
                    Some(500) => "500 Internal Server Error".into(),
                    Some(529) => "529 Overloaded".into(),
                    Some(504) => "504 Gateway Timeout".into(),
                    Some(409) => "409 Conflict: deployment is being updated".into(),
                    _ => "no capacity available for this model".into(),
                };
            }
            "completion_rate_limited" => {
                e.status = Some(429);
                let secs = self.rng.range(1, 60);
                e.message = format!(
                    "Rate limit reached for requests per minute. Please try again in {secs}s."
                );
            }
            "completion_timed_out" => {
                if self.rng.chance(0.3) {
                    e.reason = Some("time_limit");
                    e.retryable = false;
                    e.message = "model call exceeded its time limit of 600s".into();
                } else if self.rng.chance(0.5) {
                    e.status = Some(408);
                    e.message = "408 Request Timeout".into();
                } else if self.rng.chance(0.15) {
                    // A gateway's timeout, filed under timed_out: not a status the code carries.
                    e.status = Some(504);
                    e.message = "504 Gateway Timeout".into();
                } else {
                    e.message = "the model stalled: no tokens for 120s".into();
                }
            }
            "completion_failed" => {
                e.message = self
                    .rng
                    .pick(&[
                        "stream ended before the response completed",
                        "connection reset by peer",
                        "unexpected EOF while reading the response",
                    ])
                    .into();
            }
            "completion_context_too_large" => {
                let r = self.rng.below(10);
                e.reason = match r {
                    0..=1 => Some("after_compaction"),
                    2 => Some("minimal_summary_request"),
                    _ => None,
                };
                e.retryable = e.reason.is_some();
                e.status = self
                    .rng
                    .weighted(&[(Some(400u16), 6), (Some(413), 2), (None, 2)]);
                let n = self.ctx.max(128_000) + self.rng.range(1, 60_000);
                e.message = format!("prompt is too long: {n} tokens > 128000 maximum");
            }
            "completion_rejected" => {
                e.retryable = false;
                e.status = self
                    .rng
                    .weighted(&[(Some(400u16), 6), (Some(422), 2), (Some(404), 1)]);
                e.message = match e.status {
                    Some(404) => "404 model not found".into(),
                    Some(422) => {
                        "422 invalid tool schema: parameters.properties must be an object".into()
                    }
                    _ => "400 invalid request: messages[3].content must not be empty".into(),
                };
            }
            "completion_unauthorized" => {
                e.retryable = false;
                e.status = self.rng.weighted(&[(Some(401u16), 3), (Some(403), 1)]);
                e.message = if e.status == Some(401) {
                    "401 invalid API key".into()
                } else {
                    "403 this project has no access to the model".into()
                };
            }
            "completion_billing_denied" => {
                e.retryable = false;
                e.status = self
                    .rng
                    .weighted(&[(Some(402u16), 2), (Some(429), 1), (None, 1)]);
                e.message = "monthly budget exhausted for this workspace".into();
            }
            "completion_failed_permanently" => {
                e.retryable = false;
                e.message = "the provider closed the stream with a fatal error".into();
            }
            "turn_failed" => {
                e.retryable = self.rng.chance(0.5);
                e.status = self.rng.weighted(&[(None, 3), (Some(500u16), 1)]);
                e.message = "the served agent reported an error".into();
            }
            "remote_session_failed" => {
                e.retryable = false;
                e.status = self
                    .rng
                    .weighted(&[(None, 3), (Some(500u16), 1), (Some(410), 1)]);
                e.message = "the remote session failed and has ended".into();
            }
            _ => {
                // A code the table does not know, or none.
                e.code = self
                    .rng
                    .pick(&[None, Some("provider_error"), Some("overloaded_error")]);
                e.status = self.rng.weighted(&[(None, 1), (Some(500u16), 1)]);
                e.retryable = self.rng.chance(0.5);
                e.message = "unexpected provider error".into();
            }
        }
        // Now and then the recorded flag disagrees with the documented rule.
        if self.rng.chance(0.04) {
            e.retryable = !e.retryable;
        }
        // And now and then a status that the code should not carry.
        if e.status.is_none() && code == "completion_failed" && self.rng.chance(0.1) {
            e.status = Some(500);
        }
        e
    }

    /// An error that fails a turn without a model call's error.
    pub(crate) fn turn_error(&mut self) -> ErrSpec {
        let code = self.rng.weighted(&[
            ("tool_raised", 20),
            ("capability_execution_failed", 15),
            ("turn_failed", 15),
            ("tool_output_schema_mismatch", 12),
            ("invalid_compaction_summary", 8),
            ("compaction_request_too_large", 8),
            ("compaction_replacement_too_large", 8),
            ("completion_billing_denied", 8),
            ("remote_session_failed", 6),
        ]);
        let (message, status): (&str, Option<u16>) = match code {
            "tool_raised" => (
                "tool shell.exec raised: CalledProcessError(returncode=2)",
                None,
            ),
            "capability_execution_failed" => (
                "hook post_tool raised: state too large (3.1 MB > 1 MB)",
                None,
            ),
            "turn_failed" => (
                "the agent raised an unhandled exception",
                self.rng.pick(&[None, Some(500)]),
            ),
            "tool_output_schema_mismatch" => (
                "tool db.query returned data that does not match its output schema",
                None,
            ),
            "invalid_compaction_summary" => ("the compaction summary was empty", None),
            "compaction_request_too_large" => ("the history is too large to compact", None),
            "compaction_replacement_too_large" => {
                ("summary plus pinned context exceed the window", None)
            }
            "completion_billing_denied" => ("budget spent", self.rng.pick(&[None, Some(402)])),
            _ => ("the remote session failed and has ended", None),
        };
        ErrSpec {
            code: Some(code),
            message: message.into(),
            retryable: code == "turn_failed" && self.rng.chance(0.3),
            status,
            reason: None,
            request_id: false,
        }
    }

    /// A model call that ends: writes `model/end` with usage.
    pub(crate) fn model_end(
        &mut self,
        session: &str,
        turn: &str,
        finish: &str,
        out_tokens: u64,
        started: i64,
    ) {
        let input = self.ctx;
        let cached = if self.rng.chance(0.75) {
            input * self.rng.range(40, 95) / 100
        } else {
            0
        };
        let reasoning = if self.reasoning {
            out_tokens * self.rng.range(10, 70) / 100
        } else {
            0
        };
        let cache_write = if self.rng.chance(0.15) {
            self.rng.range(500, 4000)
        } else {
            0
        };
        self.wait(20, 400);
        let dur = (self.out.ts - started).max(1);
        let verbose = self.rng.chance(0.8);
        self.out.ev(session, Some(turn), "model/end", |d| {
            d.push_str("{\"finish_reason\":");
            json_str(d, finish);
            let _ = write!(
                d,
                ",\"usage\":{{\"input_tokens\":{input},\"output_tokens\":{out_tokens},\"total_tokens\":{}",
                input + out_tokens
            );
            if verbose || cached > 0 {
                let _ = write!(d, ",\"cached_input_tokens\":{cached}");
            }
            if verbose {
                let _ = write!(
                    d,
                    ",\"cache_write_tokens\":{cache_write},\"reasoning_tokens\":{reasoning}"
                );
            }
            let _ = write!(d, "}},\"duration_ms\":{dur}}}");
        });
        self.ctx += out_tokens;
    }

    pub(crate) fn model_error_event(
        &mut self,
        session: &str,
        turn: &str,
        e: &ErrSpec,
        started: i64,
    ) {
        self.wait(100, 3000);
        let dur = (self.out.ts - started).max(1);
        let mut hex = String::with_capacity(12);
        self.rng.hex(12, &mut hex);
        self.out.ev(session, Some(turn), "model/end", |d| {
            d.push_str("{\"error\":");
            e.write(&hex, d);
            let _ = write!(d, ",\"duration_ms\":{dur}}}");
        });
    }

    /// Model errors before a call succeeds (now and then), each retried after a backoff.
    /// Returns the error that ends the turn: one the runtime does not retry, the fourth in
    /// a row, or with `fail_after = Some(k)` the k-th (the turn is meant to fail).
    pub(crate) fn retried_errors(
        &mut self,
        session: &str,
        turn: &str,
        fail_after: Option<usize>,
    ) -> Option<ErrSpec> {
        let mut tries = 0;
        loop {
            if fail_after.is_none() && !self.rng.chance(0.045) {
                return None;
            }
            let e = self.model_error();
            let started = self.out.ts;
            if e.code == Some("completion_failed") && self.rng.chance(0.6) {
                // The stream broke after some text.
                let n = self.rng.range(1, 4) as u32;
                self.deltas(session, Some(turn), "text/delta", n, false);
            }
            self.model_error_event(session, turn, &e, started);
            tries += 1;
            if !e.retryable || tries >= 4 || fail_after == Some(tries) {
                return Some(e);
            }
            if self.rng.chance(0.3) {
                self.log(session, Some(turn));
            }
            // Backoff before the retry.
            let backoff = 500u64 << tries.min(5);
            self.wait(backoff, backoff * 3);
        }
    }
}
