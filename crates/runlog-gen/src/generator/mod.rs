//! The generator of one agent: [`Gen`] draws its events (sessions, run intervals, turns,
//! tool calls, subagents, runner streams) into an [`Out`], and [`render`] returns its lines
//! with what ingest will find in them. Its parts: `ends` (how turns end, model errors and
//! retries), `turn` (turns, tool calls, subagents), `runner` (runner-stream agents),
//! `anomalies` (what real pipelines do to logs).

mod anomalies;
mod ends;
mod runner;
mod turn;

use std::fmt::Write as _;

use crate::options::{GenOptions, Mix};
use crate::rng::Rng;
use crate::text::{json_str, Line, Out, BASE_MS, SPREAD_DAYS};
use crate::vocab::*;
use crate::write::part_name;

/// A recorded Error (docs/events.md) to write.
#[derive(Debug, Clone)]
pub(crate) struct ErrSpec {
    pub(crate) code: Option<&'static str>,
    pub(crate) message: String,
    pub(crate) retryable: bool,
    pub(crate) status: Option<u16>,
    pub(crate) reason: Option<&'static str>,
    pub(crate) request_id: bool,
}

impl ErrSpec {
    pub(crate) fn write(&self, rng_hex: &str, out: &mut String) {
        out.push_str("{\"code\":");
        match self.code {
            Some(c) => json_str(out, c),
            None => out.push_str("null"),
        }
        out.push_str(",\"message\":");
        json_str(out, &self.message);
        let _ = write!(out, ",\"retryable\":{}", self.retryable);
        out.push_str(",\"details\":");
        if self.status.is_none() && self.reason.is_none() && !self.request_id {
            out.push_str("null");
        } else {
            let mut first = true;
            out.push('{');
            if let Some(s) = self.status {
                let _ = write!(out, "\"http_status\":{s}");
                first = false;
            }
            if let Some(r) = self.reason {
                if !first {
                    out.push(',');
                }
                out.push_str("\"reason\":");
                json_str(out, r);
                first = false;
            }
            if self.request_id {
                if !first {
                    out.push(',');
                }
                let _ = write!(out, "\"request_id\":\"req_{rng_hex}\"");
            }
            out.push('}');
        }
        out.push('}');
    }
}

/// How a turn is to end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum End {
    /// A Completed kind without stop reason.
    Completed(&'static str),
    /// A Completed kind that is a stop reason.
    Stop(&'static str),
    Interrupted {
        kind: &'static str,
        cause: Cause,
        /// A `session/end` cancelled comes before the turn's end (subagents).
        session_cancel: bool,
    },
    /// A Failed kind; `model` when the error is a model call's (else a turn-level one).
    Failed {
        kind: &'static str,
        model: bool,
    },
    Unknown(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cause {
    None,
    Given(&'static str),
    /// The harness nests it: `reason.reason.kind`.
    Nested(&'static str),
}

/// How an unsettled agent's log ends inside its last interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Open {
    /// In the middle of a turn's stream.
    Streaming,
    /// A turn blocked on an unanswered callback.
    Blocked,
    /// After the last turn's end, before the idle.
    AfterEnd,
}

#[derive(Debug, Default)]
pub(crate) struct TurnOut {
    /// The log ended inside the turn.
    pub(crate) open: bool,
    /// Queued messages received during the turn: each asks for one more turn.
    pub(crate) queued: u32,
    /// The turn ended Failed or Interrupted.
    pub(crate) bad: bool,
}

// ---------------------------------------------------------------------------------------
// The generator of one agent

/// The knobs of the persisted mix (where it differs from the delta mix).
pub(crate) struct Persisted {
    /// Geometric parameter of the intervals after the first.
    pub(crate) intervals: f64,
    /// Geometric parameter of a root turn's steps after the first.
    pub(crate) steps: f64,
    /// Chance of one reasoning delta per step (reasoning models).
    pub(crate) reasoning: f64,
    /// Text deltas of a turn's last step and of the other steps (inclusive ranges).
    pub(crate) last_text: (u64, u64),
    pub(crate) step_text: (u64, u64),
    /// Geometric parameter of the tool calls of a step after the first.
    pub(crate) more_calls: f64,
    /// Weight factor of delegating to a subagent at the root.
    pub(crate) delegate: u32,
    /// A persisted delta holds this many streamed deltas' text.
    pub(crate) delta_scale: usize,
}

pub(crate) const PERSISTED: Persisted = Persisted {
    intervals: 0.66,
    steps: 0.47,
    reasoning: 0.4,
    last_text: (1, 2),
    step_text: (0, 1),
    more_calls: 0.15,
    delegate: 3,
    delta_scale: 2,
};

pub(crate) struct Gen {
    pub(crate) rng: Rng,
    /// Anomaly decisions: a separate stream, so the base log is the same at any rate.
    pub(crate) arng: Rng,
    pub(crate) rate: f64,
    pub(crate) out: Out,
    pub(crate) model: &'static str,
    pub(crate) reasoning: bool,
    pub(crate) next_turn: u32,
    pub(crate) next_sub: u32,
    pub(crate) next_msg: u32,
    /// Tokens in the model's context: grows with the conversation.
    pub(crate) ctx: u64,
    pub(crate) malformed_ends: bool,
    pub(crate) scratch: String,
    /// The persisted mix ([`Mix::Persisted`]): fewer deltas, steps and intervals.
    pub(crate) persisted: bool,
}

/// One agent, rendered: all lines in one buffer, in written order.
pub(crate) struct Rendered {
    pub(crate) buf: String,
    pub(crate) items: Vec<Item>,
    /// What ingest must make of these lines.
    pub(crate) expected: Expected,
}

/// Ingest's accounting of one agent's lines (docs/semantics.md §1, §7).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Expected {
    pub(crate) kept: u64,
    pub(crate) duplicates: u64,
    pub(crate) rejects: u64,
}

/// What an extra line (not a generated event) holds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Content {
    /// A new event content: a conflicting variant.
    New,
    /// The same content as this line (re-serialized).
    SameAs(usize),
    /// A line ingest rejects by itself.
    Bad,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// Written to the agent's second file (folders only).
    pub(crate) second: bool,
    /// The line's seq and time (for the other layouts).
    pub(crate) seq: u64,
    pub(crate) ts: i64,
    /// Its content identity (`Line::content`).
    pub(crate) content: Option<usize>,
}

/// Ingest's accounting of one agent's items in the order ingest reads them (§1, §7), as
/// `Gen::expected` does.
pub(crate) fn expected_in<'a>(items: impl Iterator<Item = &'a Item>) -> Expected {
    let mut e = Expected::default();
    let mut kept: Vec<Option<usize>> = Vec::new();
    for it in items {
        let Some(content) = it.content else {
            e.rejects += 1;
            continue;
        };
        let k = it.seq as usize;
        if kept.len() <= k {
            kept.resize(k + 1, None);
        }
        match &mut kept[k] {
            slot @ None => {
                *slot = Some(content);
                e.kept += 1;
            }
            Some(c) if *c == content => e.duplicates += 1,
            Some(_) => e.rejects += 1,
        }
    }
    e
}

pub(crate) fn render(opts: &GenOptions, index: u64, split: bool) -> Rendered {
    let mut rng = Rng::new(opts.seed, index, 0);
    let mut arng = Rng::new(opts.seed, index, 1);
    let rate = opts.rate();
    let root = format!("ag-{:x}-{:06}", opts.seed, index);
    let start = BASE_MS + rng.below(SPREAD_DAYS * 86_400_000) as i64;
    let (model, reasoning) = rng.weighted(
        &MODELS
            .iter()
            .map(|&(m, r, w)| ((m, r), w))
            .collect::<Vec<_>>(),
    );
    let malformed_ends = rate > 0.0 && arng.chance(0.12 * rate);
    let mut g = Gen {
        rng,
        arng,
        rate,
        out: Out {
            root,
            buf: String::with_capacity(48 << 10),
            lines: Vec::with_capacity(256),
            seq: 1,
            ts: start,
        },
        model,
        reasoning,
        next_turn: 0,
        next_sub: 0,
        next_msg: 0,
        ctx: 0,
        malformed_ends,
        scratch: String::with_capacity(1024),
        persisted: opts.mix == Mix::Persisted,
    };
    g.agent();
    // Ingest reads files in byte order of their paths: the agent's second file comes first
    // when its name sorts before the first's (file 0 after the last one).
    let second_first = if split {
        let n = opts.files.max(1) as usize;
        let first = (index % n as u64) as usize;
        let second = (first + 1) % n;
        (first != second).then(|| part_name(second) < part_name(first))
    } else {
        None
    };
    g.finish(split, second_first)
}

impl Gen {
    pub(crate) fn wait(&mut self, lo: u64, hi: u64) {
        self.out.ts += self.rng.range(lo, hi) as i64;
    }

    pub(crate) fn root(&self) -> String {
        self.out.root.clone()
    }

    pub(crate) fn new_turn(&mut self) -> String {
        self.next_turn += 1;
        format!("t-{:04}", self.next_turn)
    }

    pub(crate) fn id(&mut self, prefix: &str, digits: usize) -> String {
        let mut s = String::with_capacity(prefix.len() + digits);
        s.push_str(prefix);
        self.rng.hex(digits, &mut s);
        s
    }

    /// Words joined with spaces, about `target` characters long.
    pub(crate) fn words(&mut self, vocab: &[&str], target: usize, out: &mut String) {
        let start = out.len();
        while out.len() - start < target {
            let w = self.rng.pick(vocab);
            out.push_str(w);
            let r = self.rng.below(100);
            if r < 3 {
                out.push_str(".\n\n");
            } else if r < 8 {
                out.push_str(". ");
            } else if r < 10 {
                out.push_str(", ");
            } else if r == 10 {
                out.push_str(" — ");
            } else {
                out.push(' ');
            }
        }
    }

    /// Length of a delta: 5..=80 characters, mostly short.
    pub(crate) fn delta_len(&mut self) -> usize {
        5 + self
            .rng
            .below(76)
            .min(self.rng.below(76))
            .min(self.rng.below(76)) as usize
    }

    /// Streams `n` deltas of `ty`; returns their joined text when `keep`.
    pub(crate) fn deltas(
        &mut self,
        session: &str,
        turn: Option<&str>,
        ty: &str,
        n: u32,
        keep: bool,
    ) -> String {
        let mut all = String::new();
        let vocab = if ty == "reasoning/delta" {
            THINK_WORDS
        } else {
            WORDS
        };
        for _ in 0..n {
            let mut t = std::mem::take(&mut self.scratch);
            t.clear();
            let len = if self.persisted {
                self.delta_len() * PERSISTED.delta_scale
            } else {
                self.delta_len()
            };
            self.words(vocab, len, &mut t);
            self.wait(15, 260);
            self.out.text(session, turn, ty, &t);
            if keep {
                all.push_str(&t);
            }
            self.scratch = t;
        }
        all
    }

    pub(crate) fn progress(&mut self, session: &str, turn: Option<&str>) {
        let p = self.rng.pick(PROGRESS);
        self.wait(5, 400);
        self.out.text(session, turn, "progress", p);
    }

    pub(crate) fn log(&mut self, session: &str, turn: Option<&str>) {
        let (level, msg) = self.rng.pick(LOG_MESSAGES);
        let ms = self.rng.range(3, 4000);
        self.wait(1, 50);
        self.out.ev(session, turn, "log", |d| {
            d.push_str("{\"level\":");
            json_str(d, level);
            d.push_str(",\"message\":");
            json_str(d, msg);
            let _ = write!(d, ",\"elapsed_ms\":{ms}}}");
        });
    }

    pub(crate) fn unknown_event(&mut self, session: &str, turn: Option<&str>) {
        let ty = self.rng.pick(UNKNOWN_TYPES);
        let n = self.rng.range(1000, 90_000);
        self.wait(1, 300);
        self.out.ev(session, turn, ty, |d| {
            let _ = write!(d, "{{\"tokens\":{n},\"version\":2}}");
        });
    }

    pub(crate) fn receipt(&mut self, kind: &str) {
        let root = self.root();
        self.next_msg += 1;
        let mut id = format!("msg-{:04}-", self.next_msg);
        self.rng.hex(8, &mut id);
        self.out.ev(&root, None, "inbox/receipt", |d| {
            d.push_str("{\"message_id\":");
            json_str(d, &id);
            d.push_str(",\"kind\":");
            json_str(d, kind);
            d.push('}');
        });
    }

    pub(crate) fn session_start(
        &mut self,
        session: &str,
        parent: Option<(&str, &str)>,
        name: &str,
    ) {
        let model = self.model;
        self.out
            .ev(session, None, "session/start", |d| match parent {
                None => {
                    d.push_str("{\"parent\":null,\"parent_turn\":null,\"name\":");
                    json_str(d, name);
                    d.push_str(",\"model\":");
                    json_str(d, model);
                    d.push('}');
                }
                Some((p, pt)) => {
                    d.push_str("{\"parent\":");
                    json_str(d, p);
                    d.push_str(",\"parent_turn\":");
                    json_str(d, pt);
                    d.push_str(",\"name\":");
                    json_str(d, name);
                    d.push_str(",\"model\":");
                    json_str(d, model);
                    d.push('}');
                }
            });
    }

    pub(crate) fn session_end(&mut self, session: &str, status: &str) {
        self.wait(5, 200);
        self.out.ev(session, None, "session/end", |d| {
            d.push_str("{\"status\":");
            json_str(d, status);
            d.push('}');
        });
    }

    // -- the agent ------------------------------------------------------------------------

    pub(crate) fn agent(&mut self) {
        let root = self.root();
        let name = self
            .rng
            .pick(&["assistant", "coding-agent", "support-bot", "ops-agent"]);
        self.ctx = self.rng.range(1200, 9000);
        self.session_start(&root, None, name);
        if self.persisted {
            // No runner streams; fewer conversations.
            let intervals = 1 + self.rng.geometric(PERSISTED.intervals, 24);
            self.intervals(&root, intervals);
            return;
        }
        if self.rng.chance(0.12) {
            self.runner_agent();
            return;
        }
        let intervals = 1 + self.rng.geometric(0.74, 24);
        self.intervals(&root, intervals);
    }

    pub(crate) fn intervals(&mut self, root: &str, intervals: u32) {
        let unsettled = self.rng.chance(0.08);
        for k in 0..intervals {
            if k > 0 {
                // Between conversations: a minute to a few hours.
                let gap = if self.rng.chance(0.7) {
                    self.rng.range(30_000, 1_800_000)
                } else {
                    self.rng.range(1_800_000, 14_400_000)
                };
                self.out.ts += gap as i64;
            } else {
                self.wait(50, 5000);
            }
            if self.rng.chance(0.015) {
                // A stray idle: no interval open.
                self.out.ev0(root, None, "agent/idle");
                self.wait(100, 5000);
            }
            let open = (unsettled && k + 1 == intervals).then(|| {
                self.rng.weighted(&[
                    (Open::Streaming, 4),
                    (Open::Blocked, 3),
                    (Open::AfterEnd, 3),
                ])
            });
            self.interval(root, open);
        }
        if !unsettled && self.rng.chance(0.15) {
            self.session_end(root, "closed");
        }
    }

    pub(crate) fn interval(&mut self, root: &str, open: Option<Open>) {
        self.receipt("prompt");
        self.ctx += self.rng.range(40, 900);
        if open.is_none() && self.rng.chance(0.01) {
            // Handled without a turn (e.g. a duplicate prompt).
            self.wait(20, 400);
            self.out.ev0(root, None, "agent/idle");
            return;
        }
        if self.rng.chance(0.03) {
            self.wait(50, 2000);
            self.receipt("queued");
        }
        let mut pending = 1u32;
        let mut prev_turn: Option<String> = None;
        while pending > 0 {
            pending -= 1;
            if let Some(prev) = &prev_turn {
                if self.rng.chance(0.08) {
                    // A client acted on the turn that just ended.
                    self.wait(10, 500);
                    self.out.ev(root, None, "turn/conflict", |d| {
                        d.push_str("{\"expected_turn\":");
                        json_str(d, prev);
                        d.push_str(",\"active_turn\":null}");
                    });
                }
            }
            let last_open = if pending == 0 { open } else { None };
            let cut = last_open.filter(|o| *o != Open::AfterEnd);
            // A turn the log ends in is planned to run on (it never reaches its end).
            let end = match cut {
                Some(_) => End::Completed("completed"),
                None => self.pick_end(true),
            };
            let (t, r) = self.turn(root, 0, end, cut);
            if r.open {
                return;
            }
            pending += r.queued;
            prev_turn = Some(t);
            if r.bad && pending == 0 && self.rng.chance(0.25) {
                // The user tries again after a failure or an interruption.
                self.wait(2000, 60_000);
                self.receipt("steer");
                pending += 1;
            }
        }
        if open == Some(Open::AfterEnd) {
            return;
        }
        self.wait(20, 600);
        if self.rng.chance(0.004) {
            // `"data":null` is as good as absent: some runtimes write it.
            self.out
                .ev(root, None, "agent/idle", |d| d.push_str("null"));
        } else {
            self.out.ev0(root, None, "agent/idle");
        }
    }
}
