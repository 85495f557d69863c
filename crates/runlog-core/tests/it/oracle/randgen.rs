//! A small random event generator for the oracle tests: adversarial inputs that a
//! production-like generator would not write. Random interleavings of every event type,
//! subagent trees, overlapping and unstarted turns, malformed turn ends, late events,
//! duplicate ids, callbacks answered twice or never, run attempts settled out of order.
//!
//! Deterministic: the same (seed, index, anomalies) gives the same lines.

use serde_json::{json, Map, Value};

/// SplitMix64: small, fast, good enough for tests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }
}

const KINDS: &[&str] = &[
    "completed",
    "end_turn",
    "COMPLETED",
    "task_complete",
    "max_tokens",
    "max-tokens",
    "skipped",
    "blocked",
    "stop_sequence",
    "refusal",
    "incomplete",
    "cancelled",
    "interrupted",
    "aborted",
    "CANCELLED",
    "replaced",
    "review_ended",
    "budget_limited",
    "error",
    "failed",
    "FAILED",
    "paused_for_review",
    "Completed",
];

const CODES: &[&str] = &[
    "completion_rejected",
    "completion_unauthorized",
    "completion_rate_limited",
    "completion_unavailable",
    "completion_timed_out",
    "completion_context_too_large",
    "completion_billing_denied",
    "completion_failed",
    "completion_failed_permanently",
    "remote_session_failed",
    "capability_execution_failed",
    "tool_raised",
    "tool_output_schema_mismatch",
    "invalid_compaction_summary",
    "compaction_request_too_large",
    "compaction_replacement_too_large",
    "turn_failed",
    "provider_exploded",
];

const STATUSES: &[i64] = &[
    200, 400, 401, 403, 404, 408, 409, 413, 422, 429, 499, 500, 502, 503, 504, 529, 599, 600,
];

const TEXTS: &[&str] = &[
    "Done.",
    "Looking",
    " at the file",
    "é ünïcödé ✓",
    "",
    "multi\nline",
    "🙂 emoji",
];

struct Session {
    id: String,
    /// The turn currently active, if any.
    active: Option<String>,
    ended: bool,
}

struct Sim {
    rng: Rng,
    root: String,
    seq: u64,
    lines: Vec<String>,
    events: Vec<Value>,
    sessions: Vec<Session>,
    all_turns: Vec<(String, String)>,
    call_ids: Vec<String>,
    callback_ids: Vec<String>,
    counter: u64,
    /// (run_id, attempt) started and not yet settled by us.
    runs: Vec<(String, i64)>,
    run_counter: u64,
}

fn ts_text(micros: u64, rng: &mut Rng) -> String {
    // 2026-11-03T00:00:00Z plus micros, written in one of a few equivalent styles.
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let (h, m, s) = (secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let day = 3 + secs / 86_400;
    match rng.below(3) {
        0 => format!("2026-11-{day:02}T{h:02}:{m:02}:{s:02}.{frac:06}Z"),
        1 => format!("2026-11-{day:02}T{h:02}:{m:02}:{s:02}.{:03}Z", frac / 1000),
        _ => {
            // the same instant at +02:00
            let h2 = (h + 2) % 24;
            let day2 = if h + 2 >= 24 { day + 1 } else { day };
            format!("2026-11-{day2:02}T{h2:02}:{m:02}:{s:02}.{frac:06}+02:00")
        }
    }
}

impl Sim {
    fn id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }

    fn emit(&mut self, session: &str, turn: Option<&str>, typ: &str, data: Value) {
        self.seq += 1;
        if self.rng.chance(0.03) {
            self.seq += 1 + self.rng.below(3) as u64; // a gap: lost events
        }
        let micros = self.seq * 1_234_567 + self.rng.below(1000) as u64;
        let mut env = Map::new();
        env.insert("seq".into(), json!(self.seq));
        env.insert("ts".into(), json!(ts_text(micros, &mut self.rng)));
        env.insert("root".into(), json!(self.root));
        env.insert("session".into(), json!(session));
        match turn {
            Some(t) => {
                env.insert("turn".into(), json!(t));
            }
            None if self.rng.chance(0.1) => {
                env.insert("turn".into(), Value::Null);
            }
            None => {}
        }
        env.insert("type".into(), json!(typ));
        let empty = data.as_object().is_some_and(|m| m.is_empty());
        if !empty || self.rng.chance(0.5) {
            env.insert("data".into(), data);
        } else if self.rng.chance(0.3) {
            env.insert("data".into(), Value::Null);
        }
        let v = Value::Object(env);
        self.lines.push(v.to_string());
        self.events.push(v);
    }

    fn root_session(&self) -> String {
        self.root.clone()
    }

    /// A random live session, the root more often than not.
    fn some_session(&mut self) -> String {
        if self.sessions.len() == 1 || self.rng.chance(0.5) {
            return self.root_session();
        }
        let i = self.rng.below(self.sessions.len());
        self.sessions[i].id.clone()
    }

    fn session_mut(&mut self, id: &str) -> &mut Session {
        self.sessions.iter_mut().find(|s| s.id == id).unwrap()
    }

    /// A (session, turn) to attach a turn-scoped event to: usually an active turn,
    /// sometimes an ended or never-started one, sometimes none.
    fn some_turn(&mut self) -> (String, Option<String>) {
        let active: Vec<(String, String)> = self
            .sessions
            .iter()
            .filter_map(|s| s.active.clone().map(|t| (s.id.clone(), t)))
            .collect();
        let r = self.rng.below(100);
        if r < 75 && !active.is_empty() {
            let (s, t) = self.rng.pick(&active).clone();
            (s, Some(t))
        } else if r < 85 && !self.all_turns.is_empty() {
            let (s, t) = self.rng.pick(&self.all_turns).clone();
            (s, Some(t))
        } else if r < 90 {
            let s = self.some_session();
            let t = self.id("ghost");
            self.all_turns.push((s.clone(), t.clone()));
            (s, Some(t))
        } else {
            (self.some_session(), None)
        }
    }

    fn error(&mut self) -> Value {
        let mut e = Map::new();
        match self.rng.below(12) {
            0 => {
                e.insert("code".into(), Value::Null);
            }
            1 => {}
            _ => {
                let c = *self.rng.pick(CODES);
                e.insert("code".into(), json!(c));
            }
        }
        if self.rng.chance(0.9) {
            e.insert("message".into(), json!("something went wrong"));
        }
        match self.rng.below(5) {
            0 => {}
            1 => {
                e.insert("retryable".into(), json!("yes"));
            }
            _ => {
                let b = self.rng.chance(0.5);
                e.insert("retryable".into(), json!(b));
            }
        }
        match self.rng.below(6) {
            0 => {}
            1 => {
                e.insert("details".into(), Value::Null);
            }
            _ => {
                let mut d = Map::new();
                match self.rng.below(8) {
                    0 | 1 => {}
                    2 => {
                        let odd = self
                            .rng
                            .pick(&[json!("503"), json!(503.0), json!(429.5)])
                            .clone();
                        d.insert("http_status".into(), odd);
                    }
                    _ => {
                        let s = *self.rng.pick(STATUSES);
                        d.insert("http_status".into(), json!(s));
                    }
                }
                if self.rng.chance(0.4) {
                    let r = *self.rng.pick(&[
                        "time_limit",
                        "after_compaction",
                        "minimal_summary_request",
                        "stalled",
                    ]);
                    d.insert("reason".into(), json!(r));
                }
                e.insert("details".into(), Value::Object(d));
            }
        }
        Value::Object(e)
    }

    fn usage(&mut self) -> Value {
        let i = self.rng.below(5000) as u64;
        let o = self.rng.below(500) as u64;
        match self.rng.below(5) {
            0 => json!({}),
            1 => json!({"input_tokens": i}),
            2 if self.rng.chance(0.2) => json!({"input_tokens": "12", "output_tokens": 3.0}),
            _ => json!({"input_tokens": i, "output_tokens": o, "total_tokens": i + o,
                        "cached_input_tokens": i / 2}),
        }
    }

    fn any_json(&mut self) -> Value {
        match self.rng.below(6) {
            0 => json!({"city": "Paris", "days": [1, 2, 3]}),
            1 => json!("not valid json {"),
            2 => json!([1, {"a": null}]),
            3 => Value::Null,
            4 => json!(42.5),
            _ => json!({"nested": {"b": true, "a": "x"}}),
        }
    }

    fn turn_end_data(&mut self) -> Value {
        let mut d = Map::new();
        let r = self.rng.below(100);
        if r < 8 {
            // malformed: no string kind
            match self.rng.below(5) {
                0 => {}
                1 => {
                    d.insert("reason".into(), json!("completed"));
                }
                2 => {
                    d.insert("reason".into(), json!({"kind": null}));
                }
                3 => {
                    d.insert("reason".into(), json!({"kind": 7}));
                }
                _ => {
                    d.insert("reason".into(), json!({}));
                }
            }
        } else {
            let kind = *self.rng.pick(KINDS);
            let mut reason = Map::new();
            reason.insert("kind".into(), json!(kind));
            match self.rng.below(10) {
                0 => {
                    reason.insert("cause".into(), json!("user_stop"));
                }
                1 => {
                    reason.insert("reason".into(), json!({"kind": "deadline"}));
                }
                2 => {
                    reason.insert("cause".into(), json!(5));
                }
                _ => {}
            }
            let wants_error = self.rng.chance(0.5) || matches!(kind, "error" | "failed" | "FAILED");
            if wants_error && self.rng.chance(0.9) {
                let e = self.error();
                reason.insert("error".into(), e);
            }
            d.insert("reason".into(), Value::Object(reason));
        }
        if self.rng.chance(0.6) {
            let t = *self.rng.pick(TEXTS);
            d.insert("text".into(), json!(t));
        } else if self.rng.chance(0.1) {
            d.insert("text".into(), json!(3));
        }
        if self.rng.chance(0.3) {
            let o = self.any_json();
            d.insert("output".into(), o);
        }
        if self.rng.chance(0.1) {
            d.insert("output_error".into(), json!("does not match the schema"));
        }
        Value::Object(d)
    }

    fn step(&mut self) {
        let r = self.rng.below(1000);
        match r {
            // inbox/receipt
            0..=59 => {
                let s = if self.rng.chance(0.95) {
                    self.root_session()
                } else {
                    self.some_session()
                };
                let kind = *self.rng.pick(&["prompt", "steer", "context", "queued"]);
                let mid = self.id("m");
                let data = if self.rng.chance(0.9) {
                    json!({"message_id": mid, "kind": kind})
                } else {
                    json!({"kind": kind})
                };
                self.emit(&s, None, "inbox/receipt", data);
            }
            // agent/idle
            60..=99 => {
                let s = if self.rng.chance(0.9) {
                    self.root_session()
                } else {
                    self.some_session()
                };
                self.emit(&s, None, "agent/idle", json!({}));
            }
            // turn/start
            100..=199 => {
                let s = self.some_session();
                let busy = self.session_mut(&s).active.clone();
                if let Some(active) = busy.filter(|_| self.rng.chance(0.5)) {
                    let t = self.id("t");
                    let turn = if self.rng.chance(0.2) {
                        Some(t.as_str())
                    } else {
                        None
                    };
                    self.emit(&s, turn, "turn/busy", json!({"active_turn": active}));
                    return;
                }
                let t = match self.rng.below(20) {
                    // a turn id of another session, or a second start of a known turn
                    0 | 1 if !self.all_turns.is_empty() => self.rng.pick(&self.all_turns).1.clone(),
                    _ => self.id("t"),
                };
                self.all_turns.push((s.clone(), t.clone()));
                self.session_mut(&s).active = Some(t.clone());
                self.emit(&s, Some(&t), "turn/start", json!({}));
            }
            // turn/end
            200..=279 => {
                let (s, t) = self.some_turn();
                let d = self.turn_end_data();
                let Some(t) = t else {
                    // a turn end naming no turn
                    self.emit(&s, None, "turn/end", d);
                    return;
                };
                let sess = self.session_mut(&s);
                if sess.active.as_deref() == Some(&t) {
                    sess.active = None;
                }
                self.emit(&s, Some(&t), "turn/end", d);
            }
            // turn/conflict
            280..=289 => {
                let s = self.some_session();
                let active = self.session_mut(&s).active.clone();
                let expected = self.id("t");
                let turn = if self.rng.chance(0.2) {
                    Some(expected.clone())
                } else {
                    None
                };
                self.emit(
                    &s,
                    turn.as_deref(),
                    "turn/conflict",
                    json!({"expected_turn": expected, "active_turn": active}),
                );
            }
            // model/end
            290..=409 => {
                let (s, t) = self.some_turn();
                let mut d = Map::new();
                if self.rng.chance(0.8) {
                    let fr = *self.rng.pick(&["stop", "tool_calls", "length"]);
                    d.insert("finish_reason".into(), json!(fr));
                }
                if self.rng.chance(0.8) {
                    let u = self.usage();
                    d.insert("usage".into(), u);
                }
                match self.rng.below(10) {
                    0 | 1 => {
                        let e = self.error();
                        d.insert("error".into(), e);
                    }
                    2 => {
                        d.insert("error".into(), Value::Null);
                    }
                    3 if self.rng.chance(0.3) => {
                        d.insert("error".into(), json!("overloaded"));
                    }
                    _ => {}
                }
                if self.rng.chance(0.5) {
                    d.insert("duration_ms".into(), json!(1234.5));
                }
                self.emit(&s, t.as_deref(), "model/end", Value::Object(d));
            }
            // stream voices
            410..=559 => {
                let (s, t) = self.some_turn();
                let text = *self.rng.pick(TEXTS);
                match self.rng.below(6) {
                    0..=2 => {
                        let d = if self.rng.chance(0.95) {
                            json!({"text": text})
                        } else {
                            json!({"text": 12})
                        };
                        self.emit(&s, t.as_deref(), "text/delta", d);
                    }
                    3 => self.emit(&s, t.as_deref(), "reasoning/delta", json!({"text": text})),
                    4 => self.emit(&s, t.as_deref(), "progress", json!({"text": text})),
                    _ => self.emit(
                        &s,
                        t.as_deref(),
                        "log",
                        json!({"level": "info", "message": text}),
                    ),
                }
            }
            // tool/call
            560..=619 => {
                let (s, t) = self.some_turn();
                let mut d = Map::new();
                let id = if !self.call_ids.is_empty() && self.rng.chance(0.1) {
                    self.rng.pick(&self.call_ids).clone()
                } else {
                    self.id("call")
                };
                if self.rng.chance(0.95) {
                    d.insert("call_id".into(), json!(id));
                    self.call_ids.push(id);
                }
                if self.rng.chance(0.95) {
                    let n = *self
                        .rng
                        .pick(&["client.get_weather", "search", "shell.run"]);
                    d.insert("name".into(), json!(n));
                }
                if self.rng.chance(0.9) {
                    let a = self.any_json();
                    d.insert("arguments".into(), a);
                }
                self.emit(&s, t.as_deref(), "tool/call", Value::Object(d));
            }
            // tool/result
            620..=669 => {
                let (s, t) = self.some_turn();
                let id = if !self.call_ids.is_empty() && self.rng.chance(0.85) {
                    self.rng.pick(&self.call_ids).clone()
                } else {
                    self.id("call")
                };
                let status = *self.rng.pick(&[
                    "ok",
                    "error",
                    "denied",
                    "rejected",
                    "approval_timed_out",
                    "hook_skipped",
                    "hook_failed",
                    "invalid",
                    "budget_exceeded",
                ]);
                let d = match self.rng.below(4) {
                    0 => json!({"call_id": id, "status": status, "detail": "why"}),
                    1 => json!({"call_id": id}),
                    _ => json!({"call_id": id, "status": status}),
                };
                self.emit(&s, t.as_deref(), "tool/result", d);
            }
            // callback/open
            670..=719 => {
                let (s, t) = self.some_turn();
                let id = if !self.callback_ids.is_empty() && self.rng.chance(0.05) {
                    self.rng.pick(&self.callback_ids).clone()
                } else {
                    self.id("cb")
                };
                self.callback_ids.push(id.clone());
                let kind = *self
                    .rng
                    .pick(&["approval", "sign_in", "client_tool_call", "quiz"]);
                let d = match self.rng.below(4) {
                    0 => json!({"callback_id": id, "kind": kind}),
                    1 => json!({"callback_id": id, "kind": kind, "title": null}),
                    _ => {
                        json!({"callback_id": id, "kind": kind, "title": "Allow?", "request": {"x": 1}})
                    }
                };
                self.emit(&s, t.as_deref(), "callback/open", d);
            }
            // callback/answer
            720..=769 => {
                let (s, t) = self.some_turn();
                let id = if !self.callback_ids.is_empty() && self.rng.chance(0.9) {
                    self.rng.pick(&self.callback_ids).clone()
                } else {
                    self.id("cb")
                };
                self.emit(
                    &s,
                    t.as_deref(),
                    "callback/answer",
                    json!({"callback_id": id}),
                );
            }
            // session/start of a subagent
            770..=809 => {
                if self.sessions.len() > 6 {
                    return;
                }
                let (ps, pt) = self.some_turn();
                let id = self.id("sub");
                if self.rng.chance(0.1) {
                    // the subagent speaks before its session/start is in the log
                    let t = self.id("early");
                    self.all_turns.push((id.clone(), t.clone()));
                    let cb = self.id("cb");
                    self.callback_ids.push(cb.clone());
                    self.emit(
                        &id,
                        Some(&t),
                        "callback/open",
                        json!({"callback_id": cb, "kind": "approval"}),
                    );
                }
                self.sessions.push(Session {
                    id: id.clone(),
                    active: None,
                    ended: false,
                });
                let d = match self.rng.below(10) {
                    0 => json!({"parent": ps}),
                    1 => json!({"parent": null, "parent_turn": null}),
                    _ => json!({"parent": ps, "parent_turn": pt, "name": "helper", "model": "m1"}),
                };
                self.emit(&id, None, "session/start", d);
            }
            // session/end
            810..=834 => {
                let live: Vec<String> = self
                    .sessions
                    .iter()
                    .filter(|s| !s.ended)
                    .map(|s| s.id.clone())
                    .collect();
                if live.is_empty() {
                    return;
                }
                let s = self.rng.pick(&live).clone();
                if s != self.root || self.rng.chance(0.1) {
                    let st = *self
                        .rng
                        .pick(&["closed", "cancelled", "cancelled", "failed"]);
                    self.session_mut(&s).ended = true;
                    self.emit(&s, None, "session/end", json!({"status": st}));
                }
            }
            // runs
            835..=959 => self.run_step(),
            // unknown types
            _ => {
                let (s, t) = self.some_turn();
                let typ = *self.rng.pick(&["custom/thing", "compaction/start", "x.y"]);
                self.emit(&s, t.as_deref(), typ, json!({"any": [1, 2]}));
            }
        }
    }

    fn run_step(&mut self) {
        let root = self.root_session();
        match self.rng.below(10) {
            0..=2 => {
                // a new attempt: of a new run, or a retry of the last one
                let (run_id, attempt) = match self.runs.last() {
                    Some((id, a)) if self.rng.chance(0.4) => (id.clone(), a + 1),
                    _ => {
                        self.run_counter += 1;
                        (format!("run{}", self.run_counter), 1)
                    }
                };
                self.runs.push((run_id.clone(), attempt));
                self.emit(
                    &root,
                    None,
                    "run.started",
                    json!({"run_id": run_id, "attempt": attempt}),
                );
            }
            3 => {
                if let Some((id, _)) = self.runs.last().cloned() {
                    self.emit(
                        &root,
                        None,
                        "run.status",
                        json!({"run_id": id, "status": "RUNNING"}),
                    );
                }
            }
            _ => {
                if self.runs.is_empty() {
                    return;
                }
                // settle the latest attempt mostly, an older one sometimes
                let i = if self.rng.chance(0.8) {
                    self.runs.len() - 1
                } else {
                    self.rng.below(self.runs.len())
                };
                let (run_id, attempt) = self.runs.remove(i);
                match self.rng.below(4) {
                    0 | 1 => {
                        let output = match self.rng.below(4) {
                            0 => json!({"status": "COMPLETED", "assistantText": "All done ✓"}),
                            1 => {
                                json!({"status": "WAITING", "waitFor": {"kind": "approval", "id": "w1"}})
                            }
                            2 => json!({"status": "PAUSED"}),
                            _ => {
                                json!({"status": "COMPLETED", "assistantText": "", "finalizedPayload": {"a": 1}})
                            }
                        };
                        self.emit(
                            &root,
                            None,
                            "run.completed",
                            json!({"run_id": run_id, "attempt": attempt, "output": output}),
                        );
                    }
                    2 => {
                        let e = self.error();
                        self.emit(
                            &root,
                            None,
                            "run.failed",
                            json!({"run_id": run_id, "attempt": attempt, "error": e}),
                        );
                    }
                    _ => self.emit(
                        &root,
                        None,
                        "run.cancelled",
                        json!({"run_id": run_id, "attempt": attempt, "reason": "user"}),
                    ),
                }
            }
        }
    }
}

/// The JSONL lines of one random agent. With `anomalies`, also duplicates (exact, re-spaced,
/// conflicting), garbage lines and a shuffled order.
pub fn agent_lines(seed: u64, index: usize, anomalies: bool) -> Vec<String> {
    let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(index as u64));
    let root = format!("rand-{seed}-{index}");
    let long = rng.chance(0.1);
    let steps = 5 + rng.below(if long { 400 } else { 120 });
    let first_seq = rng.below(3) as u64;
    let mut sim = Sim {
        rng,
        root: root.clone(),
        seq: first_seq,
        lines: Vec::new(),
        events: Vec::new(),
        sessions: vec![Session {
            id: root.clone(),
            active: None,
            ended: false,
        }],
        all_turns: Vec::new(),
        call_ids: Vec::new(),
        callback_ids: Vec::new(),
        counter: 0,
        runs: Vec::new(),
        run_counter: 0,
    };
    // Most agents start like a real one.
    if sim.rng.chance(0.8) {
        sim.emit(&root, None, "session/start", json!({"parent": null}));
    }
    if sim.rng.chance(0.7) {
        sim.emit(
            &root,
            None,
            "inbox/receipt",
            json!({"message_id": "m0", "kind": "prompt"}),
        );
    }
    for _ in 0..steps {
        sim.step();
    }
    if sim.rng.chance(0.6) {
        sim.emit(&root, None, "agent/idle", json!({}));
    }
    let mut lines = sim.lines;
    if anomalies {
        let mut rng = Rng::new(seed ^ (index as u64).rotate_left(17));
        let n = lines.len();
        let mut extra = Vec::new();
        for _ in 0..(1 + n / 20) {
            let i = rng.below(n.max(1));
            let Some(line) = lines.get(i).cloned() else {
                break;
            };
            let mut v: Value = serde_json::from_str(&line).unwrap();
            match rng.below(7) {
                0 => extra.push(line),
                1 => {
                    // the same content, spaced and ordered differently
                    let obj = v.as_object().unwrap();
                    let mut parts: Vec<String> = obj
                        .iter()
                        .map(|(k, x)| {
                            format!(
                                "{:?} : {}",
                                k,
                                serde_json::to_string_pretty(x).unwrap().replace('\n', " ")
                            )
                        })
                        .collect();
                    parts.reverse();
                    extra.push(format!("{{ {} }}", parts.join(" , ")));
                }
                2 => {
                    // a conflict: same root and seq, different content
                    v["data"] = json!({"conflicting": rng.below(100)});
                    extra.push(v.to_string());
                }
                3 => extra.push("this is not json".to_string()),
                4 => extra.push("[1,2,3]".to_string()),
                5 => {
                    v.as_object_mut().unwrap().remove("ts");
                    extra.push(v.to_string());
                }
                _ => {
                    v["turn"] = json!(17);
                    extra.push(v.to_string());
                }
            }
        }
        lines.extend(extra);
        lines.push(String::new());
        rng.shuffle(&mut lines);
    }
    lines
}
