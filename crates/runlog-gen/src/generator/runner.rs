//! Runner-stream agents: a client following Runs records attempts of runs, each ending
//! completed (or waiting), failed (and retried), cancelled, or dying mid-stream.

use std::fmt::Write as _;

use super::*;

impl Gen {
    /// An agent recorded by a client following Runs: attempts of runs, each ending
    /// completed (or waiting), failed (and retried), cancelled, or dying mid-stream.
    pub(crate) fn runner_agent(&mut self) {
        let root = self.root();
        let runs = 1 + self.rng.geometric(0.75, 16);
        let mut waiting: Option<(String, String)> = None;
        for r in 0..runs {
            let last_run = r + 1 == runs;
            if r > 0 {
                self.wait(10_000, 3_600_000);
            }
            let run_id = self.id("run_", 16);
            let mut attempt = 1u32;
            loop {
                self.run_started(&root, &run_id, attempt);
                let settle = self.rng.weighted(&[
                    ("completed", 600),
                    ("waiting", 120),
                    ("failed", 100),
                    ("cancelled", 60),
                    ("dies", 100),
                    ("newer", 15),
                ]);
                let turn = match waiting.take() {
                    Some((t, cb)) => {
                        self.wait(10, 200);
                        self.out.ev(&root, Some(&t), "callback/answer", |d| {
                            d.push_str("{\"callback_id\":");
                            json_str(d, &cb);
                            d.push('}');
                        });
                        t
                    }
                    None => {
                        let t = self.new_turn();
                        self.wait(5, 100);
                        self.out.ev0(&root, Some(&t), "turn/start");
                        t
                    }
                };
                let started = self.out.ts;
                if self.rng.chance(0.3) {
                    self.progress(&root, Some(&turn));
                }
                if self.reasoning && self.rng.chance(0.6) {
                    let n = self.rng.range(1, 8) as u32;
                    self.deltas(&root, Some(&turn), "reasoning/delta", n, false);
                }
                if settle != "dies" && self.rng.chance(0.35) {
                    let n = self.rng.range(0, 2) as u32;
                    self.deltas(&root, Some(&turn), "text/delta", n, false);
                    let out_tokens = self.rng.range(20, 300);
                    self.model_end(&root, &turn, "tool_calls", out_tokens, started);
                    for _ in 0..1 + self.rng.geometric(0.3, 3) {
                        self.tool_call(&root, &turn, 3, false);
                    }
                }
                if self.rng.chance(0.1) {
                    self.log(&root, Some(&turn));
                }
                let n = self.rng.range(1, 20) as u32;
                let text = self.deltas(&root, Some(&turn), "text/delta", n, true);
                if settle == "dies" {
                    if self.rng.chance(0.3) {
                        self.deltas(&root, Some(&turn), "reasoning/delta", 1, false);
                    }
                    if last_run {
                        return; // the log ends on a delta: a provisional tail
                    }
                    // The client lost the stream and re-attached: the next attempt.
                    self.wait(2000, 30_000);
                    attempt += 1;
                    continue;
                }
                let mut hex = String::new();
                self.rng.hex(12, &mut hex);
                match settle {
                    "completed" | "newer" => {
                        let out_tokens = (text.len() as u64 / 4).max(5);
                        self.model_end(&root, &turn, "stop", out_tokens, started);
                        self.wait(5, 100);
                        self.out.ev(&root, Some(&turn), "turn/end", |d| {
                            d.push_str("{\"reason\":{\"kind\":\"COMPLETED\"},\"text\":");
                            json_str(d, &text);
                            d.push('}');
                        });
                        let payload = self.rng.chance(0.3);
                        self.wait(5, 100);
                        self.out.ev(&root, None, "run.completed", |d| {
                            d.push_str("{\"run_id\":");
                            json_str(d, &run_id);
                            let _ = write!(d, ",\"attempt\":{attempt},\"output\":{{\"status\":");
                            if settle == "newer" {
                                d.push_str("\"HANDED_OFF\"");
                            } else {
                                d.push_str("\"COMPLETED\",\"assistantText\":");
                                json_str(d, &text);
                                if payload {
                                    let _ = write!(d, ",\"finalizedPayload\":{{\"ticket\":\"T-{hex}\",\"priority\":\"normal\"}}");
                                }
                            }
                            d.push_str("}}");
                        });
                    }
                    "waiting" => {
                        let cb = self.run_waits(&root, &turn, &run_id, attempt, started);
                        waiting = Some((turn, cb));
                    }
                    "failed" => {
                        let retryable = self.run_fails(&root, &turn, &run_id, attempt, &hex);
                        if retryable && attempt < 3 {
                            self.wait(1000, 10_000);
                            attempt += 1;
                            continue;
                        }
                    }
                    _ => self.run_cancelled(&root, &turn, &run_id, attempt),
                }
                break;
            }
            if last_run && waiting.is_some() {
                // The log ends while the run waits: its turn stays blocked.
                return;
            }
        }
    }

    /// The start of a run's attempt: `run.started`, then its status(es).
    fn run_started(&mut self, root: &str, run_id: &str, attempt: u32) {
        self.wait(10, 500);
        self.out.ev(root, None, "run.started", |d| {
            d.push_str("{\"run_id\":");
            json_str(d, run_id);
            let _ = write!(d, ",\"attempt\":{attempt}}}");
        });
        let statuses: &[&str] = if self.rng.chance(0.5) {
            &["queued", "running"]
        } else {
            &["running"]
        };
        for st in statuses {
            self.wait(10, 1500);
            self.out.ev(root, None, "run.status", |d| {
                d.push_str("{\"run_id\":");
                json_str(d, run_id);
                d.push_str(",\"status\":");
                json_str(d, st);
                d.push('}');
            });
        }
    }

    /// An attempt that ends waiting on a callback: its model call's end, the callback and
    /// `run.completed` with status WAITING. Returns the callback's id.
    fn run_waits(
        &mut self,
        root: &str,
        turn: &str,
        run_id: &str,
        attempt: u32,
        started: i64,
    ) -> String {
        let kind = self.rng.weighted(&[
            ("approval", 4),
            ("client_tool_call", 3),
            ("sign_in", 1),
            ("input", 2),
        ]);
        let out_tokens = self.rng.range(20, 200);
        self.model_end(root, turn, "tool_calls", out_tokens, started);
        let cb = self.id("cb_", 16);
        self.wait(5, 60);
        self.out.ev(root, Some(turn), "callback/open", |d| {
            d.push_str("{\"callback_id\":");
            json_str(d, &cb);
            d.push_str(",\"kind\":");
            json_str(d, kind);
            d.push_str(",\"title\":null,\"request\":{}}");
        });
        self.wait(5, 100);
        self.out.ev(root, None, "run.completed", |d| {
            d.push_str("{\"run_id\":");
            json_str(d, run_id);
            let _ = write!(
                d,
                ",\"attempt\":{attempt},\"output\":{{\"status\":\"WAITING\",\"waitFor\":{{\"kind\":"
            );
            json_str(d, kind);
            d.push_str(",\"callback_id\":");
            json_str(d, &cb);
            d.push_str("}}}");
        });
        cb
    }

    /// An attempt that fails: the turn's end and `run.failed`, with a model error or the
    /// served agent's. Returns whether the error is retryable.
    fn run_fails(&mut self, root: &str, turn: &str, run_id: &str, attempt: u32, hex: &str) -> bool {
        let e = if self.rng.chance(0.5) {
            self.model_error()
        } else {
            ErrSpec {
                code: Some(self.rng.pick(&["remote_session_failed", "turn_failed"])),
                message: "the served agent failed".into(),
                retryable: self.rng.chance(0.3),
                status: self.rng.pick(&[None, Some(500)]),
                reason: None,
                request_id: true,
            }
        };
        self.wait(5, 500);
        self.out.ev(root, Some(turn), "turn/end", |d| {
            d.push_str("{\"reason\":{\"kind\":\"FAILED\",\"error\":");
            e.write(hex, d);
            d.push_str("}}");
        });
        self.wait(5, 100);
        self.out.ev(root, None, "run.failed", |d| {
            d.push_str("{\"run_id\":");
            json_str(d, run_id);
            let _ = write!(d, ",\"attempt\":{attempt},\"error\":");
            e.write(hex, d);
            d.push('}');
        });
        e.retryable
    }

    /// An attempt the client cancels: the turn's end and `run.cancelled`.
    fn run_cancelled(&mut self, root: &str, turn: &str, run_id: &str, attempt: u32) {
        self.wait(5, 500);
        self.out.ev(root, Some(turn), "turn/end", |d| {
            d.push_str("{\"reason\":{\"kind\":\"CANCELLED\",\"cause\":\"client\"}}");
        });
        self.wait(5, 100);
        self.out.ev(root, None, "run.cancelled", |d| {
            d.push_str("{\"run_id\":");
            json_str(d, run_id);
            let _ = write!(d, ",\"attempt\":{attempt},\"reason\":\"user\"}}");
        });
    }
}
