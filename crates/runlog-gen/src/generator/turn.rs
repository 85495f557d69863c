//! One turn: its model calls, deltas and tool calls (with results, callbacks and
//! subagents), and how it ends.

use std::fmt::Write as _;

use super::*;

impl Gen {
    /// One turn of `session` at `depth` (0 = root). Returns its id and what happened.
    pub(crate) fn turn(
        &mut self,
        session: &str,
        depth: u32,
        end: End,
        open: Option<Open>,
    ) -> (String, TurnOut) {
        let turn = self.new_turn();
        let is_root = depth == 0;
        let mut out = TurnOut::default();
        self.wait(5, 80);
        self.out.ev0(session, Some(&turn), "turn/start");
        let steps = 1 + match end {
            End::Interrupted { .. } => self.rng.geometric(0.5, 6),
            End::Failed { .. } => self.rng.geometric(0.45, 5),
            _ if depth > 0 => self.rng.geometric(0.45, 5),
            _ if self.persisted => self.rng.geometric(PERSISTED.steps, 14),
            _ => self.rng.geometric(0.66, 14),
        };
        if self.rng.chance(0.15) {
            self.progress(session, Some(&turn));
        }
        let mut failure: Option<ErrSpec> = None;
        let mut final_text = String::new();
        let mut busy_done = false;
        'steps: for step in 0..steps {
            let last = step + 1 == steps;
            self.interjections(
                session,
                &turn,
                is_root && step > 0,
                is_root,
                &mut busy_done,
                &mut out,
            );
            let model_fail = last && matches!(end, End::Failed { model: true, .. });
            let fail_after = model_fail.then(|| 1 + self.rng.below(4) as usize);
            if let Some(e) = self.retried_errors(session, &turn, fail_after) {
                failure = Some(e);
                break 'steps;
            }
            let started = self.out.ts;
            self.wait(200, 2500); // time to first token
            if self.persisted {
                if self.reasoning && self.rng.chance(PERSISTED.reasoning) {
                    self.deltas(session, Some(&turn), "reasoning/delta", 1, false);
                }
            } else if self.reasoning && self.rng.chance(0.6) {
                let n = self.rng.range(1, 10) as u32;
                self.deltas(session, Some(&turn), "reasoning/delta", n, false);
            }
            if last && open == Some(Open::Streaming) {
                let n = self.rng.range(1, 8) as u32;
                self.deltas(session, Some(&turn), "text/delta", n, false);
                out.open = true;
                return (turn, out);
            }
            let interrupted = matches!(end, End::Interrupted { .. });
            let n_text = match (self.persisted, last) {
                (true, true) => self.rng.range(PERSISTED.last_text.0, PERSISTED.last_text.1) as u32,
                (true, false) => {
                    self.rng.range(PERSISTED.step_text.0, PERSISTED.step_text.1) as u32
                }
                (false, true) => self.rng.range(4, 30) as u32,
                (false, false) => self.rng.range(1, 8) as u32,
            };
            if last && interrupted {
                let n = self.rng.range(0, n_text as u64) as u32;
                self.deltas(session, Some(&turn), "text/delta", n, false);
                if self.rng.chance(0.3) {
                    // Stopped while a tool ran: a call without a result.
                    let out_tokens = self.rng.range(20, 200);
                    self.model_end(session, &turn, "tool_calls", out_tokens, started);
                    let call_id = self.id("call_", 16);
                    self.wait(5, 50);
                    self.out.ev(session, Some(&turn), "tool/call", |d| {
                        d.push_str("{\"call_id\":");
                        json_str(d, &call_id);
                        d.push_str(",\"name\":\"shell.exec\",\"arguments\":{\"command\":\"npm run build\"}}");
                    });
                    self.wait(1000, 30_000);
                }
                break 'steps;
            }
            let text = self.deltas(session, Some(&turn), "text/delta", n_text, last);
            if self.rng.chance(0.12) {
                self.log(session, Some(&turn));
            }
            let turn_fail = last && matches!(end, End::Failed { model: false, .. });
            if !last || turn_fail || open == Some(Open::Blocked) {
                let out_tokens = self.rng.range(15, 400);
                self.model_end(session, &turn, "tool_calls", out_tokens, started);
                let calls = if last {
                    1
                } else if self.persisted {
                    1 + self.rng.geometric(PERSISTED.more_calls, 4)
                } else {
                    1 + self.rng.geometric(0.3, 4)
                };
                for _ in 0..calls {
                    let blocked = last && open == Some(Open::Blocked);
                    if self.tool_call(session, &turn, depth, blocked) {
                        out.open = true;
                        return (turn, out);
                    }
                    if self.rng.chance(0.08) {
                        self.progress(session, Some(&turn));
                    }
                }
                if turn_fail {
                    failure = Some(self.turn_error());
                    if let Some(e) = &failure {
                        if matches!(
                            e.code,
                            Some("invalid_compaction_summary")
                                | Some("compaction_request_too_large")
                                | Some("compaction_replacement_too_large")
                        ) {
                            self.wait(10, 200);
                            self.out.ev(session, Some(&turn), "compaction/start", |d| {
                                d.push_str("{\"trigger\":\"auto\"}");
                            });
                            self.wait(500, 20_000);
                        }
                    }
                    break 'steps;
                }
                continue;
            }
            let finish = match end {
                End::Stop("max_tokens") | End::Stop("max-tokens") | End::Stop("incomplete") => {
                    "length"
                }
                End::Stop("refusal") => "content_filter",
                End::Stop("stop_sequence") => "stop_sequence",
                _ => "stop",
            };
            let out_tokens = (text.len() as u64 / 4).max(5) + self.rng.range(0, 60);
            self.model_end(session, &turn, finish, out_tokens, started);
            final_text = text;
        }
        if self.turn_end(session, &turn, is_root, end, failure.as_ref(), &final_text) {
            out.bad = true;
        }
        (turn, out)
    }

    /// What may come between a turn's steps (`between`; root turns only) or at any step:
    /// a steer, context or queued message (a queued one first refused as `turn/busy`, once
    /// per turn), a stale `turn/conflict`, an event of an unknown type.
    fn interjections(
        &mut self,
        session: &str,
        turn: &str,
        between: bool,
        is_root: bool,
        busy_done: &mut bool,
        out: &mut TurnOut,
    ) {
        if between && self.rng.chance(0.06) {
            self.wait(200, 20_000);
            let kind = self
                .rng
                .weighted(&[("steer", 5), ("context", 3), ("queued", 3)]);
            if kind == "queued" {
                if !*busy_done && self.rng.chance(0.6) {
                    // The client first tried to start a new turn.
                    let root = self.root();
                    let t = turn.to_string();
                    self.out.ev(&root, None, "turn/busy", |d| {
                        d.push_str("{\"active_turn\":");
                        json_str(d, &t);
                        d.push('}');
                    });
                    *busy_done = true;
                }
                out.queued += 1;
            }
            self.receipt(kind);
        }
        if is_root && self.rng.chance(0.01) {
            let root = self.root();
            let t = turn.to_string();
            let stale = format!("t-{:04}", self.next_turn.saturating_sub(1).max(1));
            self.out.ev(&root, None, "turn/conflict", |d| {
                d.push_str("{\"expected_turn\":");
                json_str(d, &stale);
                d.push_str(",\"active_turn\":");
                json_str(d, &t);
                d.push('}');
            });
        }
        if self.rng.chance(0.02) {
            self.unknown_event(session, Some(turn));
        }
    }

    /// The end of a turn: a cancelled session's end first, then the `turn/end` of its
    /// ending (`failure` for a failed one), or a malformed one (a root turn, with
    /// anomalies). Returns whether the turn ended Failed or Interrupted.
    fn turn_end(
        &mut self,
        session: &str,
        turn: &str,
        is_root: bool,
        end: End,
        failure: Option<&ErrSpec>,
        final_text: &str,
    ) -> bool {
        let mut bad = false;
        self.wait(5, 150);
        if let End::Interrupted {
            session_cancel: true,
            ..
        } = end
        {
            self.out.ev(session, None, "session/end", |d| {
                d.push_str("{\"status\":\"cancelled\"}")
            });
            self.wait(1, 30);
        }
        let malformed = is_root && self.malformed_ends && self.arng.chance(0.3);
        if malformed {
            let variant = self.arng.below(3);
            self.out.ev(session, Some(turn), "turn/end", |d| {
                d.push_str(match variant {
                    0 => "{\"reason\":{\"cause\":\"user_cancel\"},\"text\":\"\"}",
                    1 => "{\"reason\":{\"kind\":3}}",
                    _ => "{\"reason\":\"completed\",\"text\":\"done\"}",
                });
            });
            return false;
        }
        let structured = self.rng.below(100);
        let mut hex = String::new();
        self.rng.hex(12, &mut hex);
        let files_changed = self.rng.range(0, 9);
        match (end, failure) {
            (_, Some(e)) => {
                bad = true;
                let kind = match end {
                    End::Failed { kind, .. } => kind,
                    _ => "error",
                };
                self.out.ev(session, Some(turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    d.push_str(",\"error\":");
                    e.write(&hex, d);
                    d.push_str("}}");
                });
            }
            (End::Completed(kind), None) => {
                self.out.ev(session, Some(turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    d.push_str("},\"text\":");
                    json_str(d, final_text);
                    if structured < 8 {
                        let _ = write!(
                            d,
                            ",\"output\":{{\"status\":\"done\",\"files_changed\":{files_changed},\"summary\":"
                        );
                        json_str(d, final_text.get(..40).unwrap_or(final_text));
                        d.push('}');
                    } else if structured == 8 {
                        d.push_str(",\"output\":\"{\\\"status\\\": \\\"done\\\", \\\"files\",\"output_error\":\"EOF while parsing an object at line 1 column 28\"");
                    }
                    d.push('}');
                });
            }
            (End::Stop(kind), None) | (End::Unknown(kind), None) => {
                let unknown = matches!(end, End::Unknown(_));
                self.out.ev(session, Some(turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    if unknown {
                        let _ = write!(d, ",\"ticket\":\"rv_{hex}\"");
                    }
                    d.push_str("},\"text\":");
                    json_str(d, final_text);
                    d.push('}');
                });
            }
            (End::Interrupted { kind, cause, .. }, None) => {
                bad = true;
                self.out.ev(session, Some(turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    match cause {
                        Cause::Given(c) => {
                            d.push_str(",\"cause\":");
                            json_str(d, c);
                        }
                        Cause::Nested(c) => {
                            d.push_str(",\"reason\":{\"kind\":");
                            json_str(d, c);
                            d.push('}');
                        }
                        Cause::None => {}
                    }
                    d.push_str("}}");
                });
            }
            (End::Failed { .. }, None) => unreachable!("a failed turn always has its error"),
        }
        bad
    }

    /// One tool call with its result (and callbacks, subagents). With `block`, the call
    /// waits on a callback and the log ends there: returns true.
    pub(crate) fn tool_call(&mut self, session: &str, turn: &str, depth: u32, block: bool) -> bool {
        let (name, kind) = self.pick_tool(depth);
        let call_id = self.id("call_", 16);
        let (invalid, name, args) = self.tool_arguments(name, block);
        self.wait(5, 80);
        self.out.ev(session, Some(turn), "tool/call", |d| {
            d.push_str("{\"call_id\":");
            json_str(d, &call_id);
            d.push_str(",\"name\":");
            json_str(d, name);
            d.push_str(",\"arguments\":");
            d.push_str(&args);
            d.push('}');
        });
        let (mut status, mut detail): (&str, Option<&str>) = ("ok", None);
        if invalid {
            status = "invalid";
            detail = Some(if args.starts_with('"') {
                "arguments are not valid JSON"
            } else {
                "unknown tool"
            });
        } else {
            let cb_kind = match kind {
                ToolKind::Approval if block || self.rng.chance(0.6) => Some("approval"),
                ToolKind::Client => Some("client_tool_call"),
                ToolKind::SignIn if block || self.rng.chance(0.5) => Some("sign_in"),
                _ if block => Some("approval"),
                // Nested subagents run sandboxed: more of their calls need an approval.
                ToolKind::Plain if depth == 2 && self.rng.chance(0.4) => Some("approval"),
                _ if self.rng.chance(0.005) => Some("elicitation"),
                _ => None,
            };
            if let Some(ck) = cb_kind {
                let cb = self.id("cb_", 16);
                let title: Option<String> = match ck {
                    "approval" if self.rng.chance(0.85) => Some(match name {
                        "shell.exec" => "Run a shell command?".to_string(),
                        "fs.write_file" => "Allow writing to the workspace?".to_string(),
                        _ => format!("Allow {name}?"),
                    }),
                    "sign_in" => Some(format!(
                        "Sign in to {}",
                        if name.starts_with("calendar") {
                            "Google Calendar"
                        } else {
                            "GitHub"
                        }
                    )),
                    "elicitation" => Some("Which environment should I use?".to_string()),
                    _ => None,
                };
                self.wait(5, 60);
                self.out.ev(session, Some(turn), "callback/open", |d| {
                    d.push_str("{\"callback_id\":");
                    json_str(d, &cb);
                    d.push_str(",\"kind\":");
                    json_str(d, ck);
                    d.push_str(",\"title\":");
                    match &title {
                        Some(t) => json_str(d, t),
                        None => d.push_str("null"),
                    }
                    d.push_str(",\"request\":{\"tool\":");
                    json_str(d, name);
                    d.push_str(",\"call_id\":");
                    json_str(d, &call_id);
                    d.push_str("}}");
                });
                if block {
                    return true;
                }
                let answered = ck != "approval" || self.rng.chance(0.85);
                if answered {
                    // A person (or the client) takes a while.
                    self.wait(1500, 90_000);
                    if self.rng.chance(0.1) {
                        self.log(session, Some(turn));
                    }
                    self.out.ev(session, Some(turn), "callback/answer", |d| {
                        d.push_str("{\"callback_id\":");
                        json_str(d, &cb);
                        d.push('}');
                    });
                    if ck == "approval" && self.rng.chance(0.12) {
                        status = "denied";
                        detail = Some("the user denied the call");
                    }
                } else {
                    // Never answered: the call times out; the callback closes with the turn.
                    self.wait(300_000, 300_500);
                    status = "approval_timed_out";
                    detail = Some("no answer within 300s");
                }
            }
            if kind == ToolKind::Delegate && status == "ok" {
                let sub = self.subagent(session, turn, depth + 1);
                if sub != "closed" {
                    status = "error";
                    detail = Some(if sub == "cancelled" {
                        "the subagent was cancelled"
                    } else {
                        "the subagent failed"
                    });
                }
            } else if status == "ok" {
                self.wait(10, 3000);
                let (s, dt) = self.tool_outcome();
                status = s;
                detail = dt;
            }
        }
        let bytes = self.rng.range(0, 20_000);
        self.wait(1, 40);
        self.out.ev(session, Some(turn), "tool/result", |d| {
            d.push_str("{\"call_id\":");
            json_str(d, &call_id);
            d.push_str(",\"status\":");
            json_str(d, status);
            if let Some(dt) = detail {
                d.push_str(",\"detail\":");
                json_str(d, dt);
            }
            let _ = write!(d, ",\"output_bytes\":{bytes}}}");
        });
        self.ctx += bytes / 4;
        false
    }

    /// The tool a call is of (subagents delegate more; their own subagents do not).
    fn pick_tool(&mut self, depth: u32) -> (&'static str, ToolKind) {
        let all: &[(&str, ToolKind, u32)] = TOOLS;
        let idx = self.rng.weighted(
            &all.iter()
                .enumerate()
                .map(|(i, t)| {
                    // Subagents delegate more; grandchildren do not.
                    let w = match (t.1, depth) {
                        (ToolKind::Delegate, 0) if self.persisted => PERSISTED.delegate * t.2,
                        (ToolKind::Delegate, 0) => t.2,
                        (ToolKind::Delegate, 1) => 3 * t.2,
                        (ToolKind::Delegate, _) => 0,
                        _ => t.2,
                    };
                    (i, w)
                })
                .collect::<Vec<_>>(),
        );
        (all[idx].0, all[idx].1)
    }

    /// A call's arguments, as the model wrote them: now and then not valid JSON, or for a
    /// tool that does not exist. Returns whether they are invalid, the tool's name and the
    /// arguments. A blocked call's are always valid.
    fn tool_arguments(&mut self, name: &'static str, block: bool) -> (bool, &'static str, String) {
        let invalid = if block { 100 } else { self.rng.below(100) };
        let (name, args): (&str, String) = if invalid < 2 {
            (
                name,
                format!("\"{{\\\"path\\\": \\\"{}\"", self.rng.pick(PATHS)),
            )
        } else if invalid < 3 {
            (
                self.rng.pick(&["search_web", "run_python", "read"]),
                "{\"q\":\"status\"}".into(),
            )
        } else {
            let a = match name {
                "fs.read_file" | "fs.write_file" => format!(
                    "{{\"path\":\"{}\",\"max_bytes\":{}}}",
                    self.rng.pick(PATHS),
                    self.rng.range(1, 64) * 1024
                ),
                "fs.list_dir" => "{\"path\":\".\",\"recursive\":false}".into(),
                "code.search" => format!(
                    "{{\"pattern\":\"{}\",\"glob\":\"**/*.rs\"}}",
                    self.rng
                        .pick(&["parse_config", "TODO", "fn main", "unwrap()", "retry"])
                ),
                "shell.exec" => format!(
                    "{{\"command\":\"{}\",\"timeout_s\":120}}",
                    self.rng.pick(COMMANDS)
                ),
                "web.search" | "web.fetch" => {
                    format!(
                        "{{\"query\":\"{}\",\"top_k\":{}}}",
                        self.rng.pick(QUERIES),
                        self.rng.range(3, 10)
                    )
                }
                "agent.delegate" => format!(
                    "{{\"agent\":\"{}\",\"task\":\"{}\"}}",
                    self.rng.pick(SUB_NAMES),
                    self.rng.pick(PROGRESS)
                ),
                "client.get_location" => "{\"precision\":\"city\"}".into(),
                "client.get_weather" => "{\"city\":\"Lisbon\",\"units\":\"metric\"}".into(),
                _ => format!(
                    "{{\"id\":{},\"dry_run\":{}}}",
                    self.rng.range(1, 9999),
                    self.rng.chance(0.5)
                ),
            };
            (name, a)
        };
        let invalid = invalid < 3;
        (invalid, name, args)
    }

    /// The result of a call that ran (status and detail): mostly ok, else an error, a
    /// policy rejection, a hook's verdict or an exhausted budget.
    fn tool_outcome(&mut self) -> (&'static str, Option<&'static str>) {
        self.rng.weighted(&[
            (("ok", None), 850),
            (("error", Some("exit status 1")), 40),
            (("error", Some("ENOENT: no such file or directory")), 25),
            (("error", Some("timed out after 120s")), 10),
            (
                (
                    "rejected",
                    Some("policy: network access is disabled for this agent"),
                ),
                20,
            ),
            (
                (
                    "hook_skipped",
                    Some("pre_tool hook skipped the call: read-only mode"),
                ),
                12,
            ),
            (("hook_failed", Some("pre_tool hook raised ValueError")), 10),
            (
                ("budget_exceeded", Some("tool budget of 50 calls exceeded")),
                10,
            ),
        ])
    }

    /// A subagent spawned by (`parent`, `parent_turn`): its session, turns and end.
    /// Returns its `session/end` status.
    pub(crate) fn subagent(&mut self, parent: &str, parent_turn: &str, depth: u32) -> &'static str {
        self.next_sub += 1;
        let session = format!("{parent}/sub-{}", self.next_sub);
        let name = self.rng.pick(SUB_NAMES);
        self.wait(10, 300);
        self.session_start(&session, Some((parent, parent_turn)), name);
        let status = self
            .rng
            .weighted(&[("closed", 85), ("cancelled", 8), ("failed", 7)]);
        let turns = 1 + self.rng.geometric(0.2, 2);
        let saved_ctx = self.ctx;
        self.ctx = self.rng.range(800, 4000);
        for i in 0..turns {
            let last = i + 1 == turns;
            let end = if !last {
                End::Completed("completed")
            } else {
                match status {
                    "cancelled" => End::Interrupted {
                        kind: self.rng.pick(&["interrupted", "cancelled"]),
                        cause: Cause::None,
                        session_cancel: true,
                    },
                    "failed" => End::Failed {
                        kind: "error",
                        model: self.rng.chance(0.5),
                    },
                    _ => self.pick_end(false),
                }
            };
            self.turn(&session, depth, end, None);
        }
        if status != "cancelled" {
            self.session_end(&session, status);
        }
        self.ctx = saved_ctx + self.rng.range(100, 1500);
        status
    }
}
