//! A second, deliberately simple implementation of docs/semantics.md §2–§5.
//!
//! Written from the spec alone, over plain `serde_json::Value` events, favouring obvious
//! clarity over speed: every question ("which interval is open at seq s?", "what is the
//! state of this turn as of cursor c?") is answered by scanning the whole event list again.
//! Nothing here is incremental, nothing is cached.
//!
//! An event is `{"seq", "ts" (µs), "root", "session", "turn" (string or null), "type",
//! "data" (object)}`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// Rows of every table, by table name; each row a JSON object.
pub type Tables = BTreeMap<&'static str, Vec<Value>>;

pub const TABLES: [&str; 7] = [
    "intervals",
    "turns",
    "errors",
    "tool_calls",
    "callbacks",
    "runs",
    "agents",
];

// ---------------------------------------------------------------------------------------
// Reading events

fn seq(e: &Value) -> u64 {
    e["seq"].as_u64().expect("seq")
}

fn ts(e: &Value) -> i64 {
    e["ts"].as_i64().expect("ts")
}

fn typ(e: &Value) -> &str {
    e["type"].as_str().expect("type")
}

fn session(e: &Value) -> &str {
    e["session"].as_str().expect("session")
}

fn turn(e: &Value) -> Option<&str> {
    e["turn"].as_str()
}

fn data(e: &Value) -> &Value {
    &e["data"]
}

/// `v.a.b.c` when every step is an object holding the key.
fn path<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for k in keys {
        cur = cur.as_object()?.get(*k)?;
    }
    Some(cur)
}

fn path_str(v: &Value, keys: &[&str]) -> Option<String> {
    path(v, keys).and_then(Value::as_str).map(str::to_string)
}

/// An integer field: a JSON integer, or a float with no fractional part.
fn path_int(v: &Value, keys: &[&str]) -> Option<i64> {
    let x = path(v, keys)?;
    if let Some(i) = x.as_i64() {
        return Some(i);
    }
    let f = x.as_f64()?;
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Some(f as i64)
    } else {
        None
    }
}

fn opt_str(s: Option<String>) -> Value {
    match s {
        Some(s) => Value::String(s),
        None => Value::Null,
    }
}

fn opt_int(i: Option<i64>) -> Value {
    match i {
        Some(i) => json!(i),
        None => Value::Null,
    }
}

fn chars(s: &str) -> i64 {
    s.chars().count() as i64
}

// ---------------------------------------------------------------------------------------
// The fixed tables of the spec

/// The state a string `reason.kind` maps to (§3), and whether it is the stop reason.
fn state_of_kind(kind: &str) -> (&'static str, bool) {
    match kind {
        "completed" | "end_turn" | "COMPLETED" | "task_complete" => ("Completed", false),
        "max_tokens" | "max-tokens" | "skipped" | "blocked" | "stop_sequence" | "refusal"
        | "incomplete" => ("Completed", true),
        "cancelled" | "interrupted" | "aborted" | "CANCELLED" | "replaced" | "review_ended"
        | "budget_limited" => ("Interrupted", false),
        "error" | "failed" | "FAILED" => ("Failed", false),
        _ => ("UnknownOutcome", false),
    }
}

/// The finish class of a turn end (docs/finish-class.md): the documented table's entry for
/// the kind read in lower case with `_` for `-` and spaces, else `other`; `incomplete` takes
/// its cause's class when the cause is a listed kind other than `other`.
fn class_of_end(e: &Value) -> Option<&'static str> {
    let kind = path_str(data(e), &["reason", "kind"])?;
    let listed = |k: &str| {
        let k = k.to_lowercase().replace(['-', ' '], "_");
        runlog_core::reduce::finish_class::TABLE
            .iter()
            .find(|(known, _, _)| *known == k)
            .map(|(_, class, _)| class.as_str())
    };
    let cause = path_str(data(e), &["reason", "cause"]);
    let refined = match cause {
        Some(c) if kind.to_lowercase() == "incomplete" => listed(&c).filter(|c| *c != "other"),
        _ => None,
    };
    Some(refined.or_else(|| listed(&kind)).unwrap_or("other"))
}

/// The HTTP statuses the code's column (§4) accepts; `None` for NULL/unknown codes.
fn status_ok(code: &str, status: i64) -> Option<bool> {
    let is4xx = (400..500).contains(&status);
    let is5xx = (500..600).contains(&status);
    Some(match code {
        "completion_rejected" => is4xx && ![401, 403, 408, 409, 429].contains(&status),
        "completion_unauthorized" => status == 401 || status == 403,
        "completion_rate_limited" => status == 429,
        "completion_unavailable" => status == 409 || status == 429 || is5xx,
        "completion_timed_out" => status == 408,
        "completion_context_too_large" => is4xx,
        "completion_billing_denied" => true,
        "completion_failed" => false,
        "completion_failed_permanently" => false,
        "remote_session_failed" => true,
        "capability_execution_failed" => false,
        "tool_raised" => false,
        "tool_output_schema_mismatch" => false,
        "invalid_compaction_summary" => false,
        "compaction_request_too_large" => false,
        "compaction_replacement_too_large" => false,
        "turn_failed" => true,
        _ => return None,
    })
}

/// The `retryable_expected` column of §4.
fn retryable_rule(code: &str, status: Option<i64>, reason: Option<&str>) -> Option<bool> {
    match code {
        "completion_rejected" => Some(false),
        "completion_unauthorized" => Some(false),
        "completion_rate_limited" => Some(true),
        "completion_unavailable" => match status {
            Some(502) | Some(503) | Some(504) => Some(true),
            _ => None,
        },
        "completion_timed_out" => Some(reason != Some("time_limit")),
        "completion_context_too_large" => Some(matches!(
            reason,
            Some("after_compaction") | Some("minimal_summary_request")
        )),
        "completion_billing_denied" => Some(false),
        "completion_failed" => Some(true),
        "completion_failed_permanently" => Some(false),
        "remote_session_failed" => Some(false),
        "capability_execution_failed" => Some(false),
        "tool_raised" => Some(false),
        "tool_output_schema_mismatch" => Some(false),
        "invalid_compaction_summary" => Some(false),
        "compaction_request_too_large" => Some(false),
        "compaction_replacement_too_large" => Some(false),
        _ => None, // turn_failed, unknown codes
    }
}

const SETTLING: [&str; 3] = ["run.completed", "run.failed", "run.cancelled"];

// ---------------------------------------------------------------------------------------
// The oracle

/// One agent's events, in `seq` order.
pub struct Oracle {
    pub root: String,
    pub events: Vec<Value>,
}

/// An owned run interval: indices into the events.
struct Interval {
    open: usize,
    close: Option<usize>,
    joined: i64,
}

/// How a turn ended, as of some cursor.
enum End<'a> {
    /// No `turn/end` at or before the cursor.
    None,
    /// A `turn/end` without a string kind.
    Malformed(&'a Value),
    Kind(&'a Value, String),
}

impl Oracle {
    pub fn new(root: &str, mut events: Vec<Value>) -> Oracle {
        events.sort_by_key(seq);
        Oracle {
            root: root.to_string(),
            events,
        }
    }

    /// The events with `seq <= c`.
    fn upto(&self, c: u64) -> impl Iterator<Item = &Value> {
        self.events.iter().filter(move |e| seq(e) <= c)
    }

    fn last_seq(&self) -> u64 {
        self.events.last().map(seq).unwrap_or(0)
    }

    // ----- §2 intervals

    fn intervals(&self) -> (Vec<Interval>, i64) {
        let mut out = Vec::new();
        let mut open: Option<Interval> = None;
        let mut stray = 0;
        for (i, e) in self.events.iter().enumerate() {
            if typ(e) == "inbox/receipt" && session(e) == self.root {
                match &mut open {
                    None => {
                        open = Some(Interval {
                            open: i,
                            close: None,
                            joined: 0,
                        })
                    }
                    Some(iv) => iv.joined += 1,
                }
            }
            if typ(e) == "agent/idle" {
                match open.take() {
                    Some(mut iv) => {
                        iv.close = Some(i);
                        out.push(iv);
                    }
                    None => stray += 1,
                }
            }
        }
        if let Some(iv) = open {
            out.push(iv);
        }
        (out, stray)
    }

    /// Whether `s` lies strictly inside the interval.
    fn inside(&self, iv: &Interval, s: u64) -> bool {
        let open = seq(&self.events[iv.open]);
        let close = iv.close.map(|c| seq(&self.events[c]));
        s > open && close.is_none_or(|c| s < c)
    }

    /// The open_seq of the interval open at seq `s`.
    fn interval_at(&self, s: u64) -> Option<u64> {
        let (ivs, _) = self.intervals();
        ivs.iter()
            .find(|iv| self.inside(iv, s))
            .map(|iv| seq(&self.events[iv.open]))
    }

    fn interval_rows(&self) -> Vec<Value> {
        let (ivs, _) = self.intervals();
        let errors = self.error_events();
        let mut rows = Vec::new();
        for iv in &ivs {
            let open = &self.events[iv.open];
            let close = iv.close.map(|c| &self.events[c]);
            let inside: Vec<&Value> = self
                .events
                .iter()
                .filter(|e| self.inside(iv, seq(e)))
                .collect();
            let count = |t: &str| inside.iter().filter(|e| typ(e) == t).count() as i64;
            let tokens = |k: &str| -> i64 {
                inside
                    .iter()
                    .filter(|e| typ(e) == "model/end")
                    .map(|e| path_int(data(e), &["usage", k]).unwrap_or(0))
                    .sum()
            };
            let n_errors = errors.iter().filter(|e| self.inside(iv, seq(e))).count() as i64;
            // gaps: consecutive events, both inside or bounding the interval
            let lo = seq(open);
            let hi = close.map(seq).unwrap_or(u64::MAX);
            let mut gaps = 0;
            for w in self.events.windows(2) {
                let (a, b) = (seq(&w[0]), seq(&w[1]));
                if a >= lo && b <= hi && b - a > 1 {
                    gaps += 1;
                }
            }
            let last_root_end = inside
                .iter()
                .rfind(|e| typ(e) == "turn/end" && session(e) == self.root);
            let (status, finish_reason, protocol_error) = if close.is_none() {
                ("unsettled", None, None)
            } else {
                match last_root_end {
                    None => ("settled", None, None),
                    Some(e) => match path_str(data(e), &["reason", "kind"]) {
                        Some(k) => ("settled", Some(k), None),
                        None => ("protocol_error", None, Some(seq(e) as i64)),
                    },
                }
            };
            let finish_class = match finish_reason {
                Some(_) => last_root_end.and_then(|e| class_of_end(e)),
                None => None,
            };
            rows.push(json!({
                "root": self.root,
                "open_seq": seq(open),
                "close_seq": close.map(seq),
                "opened_at": ts(open),
                "closed_at": close.map(ts),
                "status": status,
                "finish_reason": finish_reason,
                "finish_class": finish_class,
                "protocol_error": protocol_error,
                "message_id": path_str(data(open), &["message_id"]),
                "joined_messages": iv.joined,
                "turns": count("turn/start"),
                "model_calls": count("model/end"),
                "errors": n_errors,
                "tool_calls": count("tool/call"),
                "input_tokens": tokens("input_tokens"),
                "output_tokens": tokens("output_tokens"),
                "busy": count("turn/busy"),
                "conflicts": count("turn/conflict"),
                "seq_gaps": gaps,
            }));
        }
        rows
    }

    // ----- §3 turns

    /// Whether an event names a turn (refusals are not turns).
    fn names_turn(e: &Value) -> bool {
        turn(e).is_some() && typ(e) != "turn/busy" && typ(e) != "turn/conflict"
    }

    /// Every (session, turn), in order of first appearance at or before `c`.
    fn turn_keys(&self, c: u64) -> Vec<(String, String)> {
        let mut keys: Vec<(String, String)> = Vec::new();
        for e in self.upto(c) {
            if Self::names_turn(e) {
                let k = (session(e).to_string(), turn(e).unwrap().to_string());
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        keys
    }

    /// The events of a turn at or before `c`.
    fn turn_events(&self, s: &str, t: &str, c: u64) -> Vec<&Value> {
        self.upto(c)
            .filter(|e| Self::names_turn(e) && session(e) == s && turn(e) == Some(t))
            .collect()
    }

    fn turn_end(&self, s: &str, t: &str, c: u64) -> End<'_> {
        let end = self.first_end(s, t).filter(|e| seq(e) <= c);
        match end {
            None => End::None,
            Some(e) => match path_str(data(e), &["reason", "kind"]) {
                Some(k) => End::Kind(e, k),
                None => End::Malformed(e),
            },
        }
    }

    /// The first seq naming the turn, and the seq of its `turn/start` if any.
    fn turn_start(&self, s: &str, t: &str) -> (u64, Option<u64>) {
        let evs = self.turn_events(s, t, u64::MAX);
        let first = seq(evs[0]);
        let start = evs.iter().find(|e| typ(e) == "turn/start").map(|e| seq(e));
        (first, start)
    }

    /// The turn's `text/delta` texts up to `c` and before its end, joined: what the turn
    /// said before it stopped.
    fn deltas(&self, s: &str, t: &str, c: u64) -> String {
        let end = self.first_end(s, t).map(seq).unwrap_or(u64::MAX);
        self.turn_events(s, t, c)
            .iter()
            .filter(|e| typ(e) == "text/delta" && seq(e) < end)
            .filter_map(|e| path(data(e), &["text"]).and_then(Value::as_str))
            .collect()
    }

    /// Whether the callback opened by `cb` blocks turn (s, t) as of `c`: it was opened by the
    /// turn itself, or by a session spawned in it, at any depth (up the parent chain).
    fn blocks(&self, cb: &Value, s: &str, t: &str, c: u64) -> bool {
        if session(cb) == s && turn(cb) == Some(t) {
            return true;
        }
        let mut cur = session(cb).to_string();
        let mut seen = vec![cur.clone()];
        while let Some((parent, parent_turn)) = self.parent_of(&cur, c) {
            if parent == s && parent_turn.as_deref() == Some(t) {
                return true;
            }
            if seen.contains(&parent) {
                return false;
            }
            seen.push(parent.clone());
            cur = parent;
        }
        false
    }

    /// The parent session of a session and the turn that spawned it, as of `c`.
    fn parent_of(&self, s: &str, c: u64) -> Option<(String, Option<String>)> {
        let start = self
            .upto(c)
            .find(|e| typ(e) == "session/start" && session(e) == s)?;
        Some((
            path_str(data(start), &["parent"])?,
            path_str(data(start), &["parent_turn"]),
        ))
    }

    /// The first `turn/end` of a turn (the one that decides its state).
    fn first_end(&self, s: &str, t: &str) -> Option<&Value> {
        self.events
            .iter()
            .find(|e| typ(e) == "turn/end" && session(e) == s && turn(e) == Some(t))
    }

    /// Where each `callback/open` (by event index) closed: an answer closes the earliest
    /// still-open callback with its id; the first end of the opening turn closes the rest.
    fn callback_closes(&self) -> BTreeMap<usize, (u64, &'static str)> {
        let evs = &self.events;
        let mut closed: BTreeMap<usize, (u64, &'static str)> = BTreeMap::new();
        for (i, e) in evs.iter().enumerate() {
            let still_open = |j: usize, closed: &BTreeMap<usize, _>| {
                typ(&evs[j]) == "callback/open" && !closed.contains_key(&j)
            };
            if typ(e) == "callback/answer" {
                let Some(id) = path_str(data(e), &["callback_id"]) else {
                    continue;
                };
                let first = (0..i).find(|&j| {
                    still_open(j, &closed)
                        && path_str(data(&evs[j]), &["callback_id"]).as_deref() == Some(&id)
                });
                if let Some(j) = first {
                    closed.insert(j, (seq(e), "answer"));
                }
            }
            if typ(e) == "turn/end" {
                let Some(t) = turn(e) else { continue };
                if self.first_end(session(e), t).map(seq) != Some(seq(e)) {
                    continue;
                }
                for (j, cb) in evs.iter().enumerate().take(i) {
                    if still_open(j, &closed) && session(cb) == session(e) && turn(cb) == Some(t) {
                        closed.insert(j, (seq(e), "turn_end"));
                    }
                }
            }
        }
        closed
    }

    fn open_callbacks(&self, s: &str, t: &str, c: u64) -> Vec<&Value> {
        let closes = self.callback_closes();
        (0..self.events.len())
            .filter(|&j| typ(&self.events[j]) == "callback/open" && seq(&self.events[j]) <= c)
            .filter(|j| closes.get(j).is_none_or(|(close, _)| *close > c))
            .map(|j| &self.events[j])
            .filter(|cb| self.blocks(cb, s, t, c))
            .collect()
    }

    /// The state record of a turn as of cursor `c` (docs/semantics.md §3).
    pub fn state_record(&self, s: &str, t: &str, c: u64) -> Value {
        let mut rec = Map::new();
        let state: Value;
        match self.turn_end(s, t, c) {
            End::None => {
                rec.insert("text".into(), json!(self.deltas(s, t, c)));
                let open = self.open_callbacks(s, t, c);
                if open.is_empty() {
                    state = json!("Running");
                } else {
                    state = json!("Blocked");
                    let cbs: Vec<Value> = open
                        .iter()
                        .map(|cb| {
                            json!({
                                "id": path_str(data(cb), &["callback_id"]),
                                "session_id": session(cb),
                                "turn_id": turn(cb),
                                "kind": path_str(data(cb), &["kind"]),
                                "title": path_str(data(cb), &["title"]),
                            })
                        })
                        .collect();
                    rec.insert("callbacks".into(), Value::Array(cbs));
                }
            }
            End::Malformed(e) => {
                state = Value::Null;
                rec.insert("text".into(), Value::Null);
                rec.insert("protocol_error".into(), json!(seq(e).to_string()));
            }
            End::Kind(e, kind) => {
                let d = data(e);
                let reason = path(d, &["reason"]).cloned().unwrap_or(Value::Null);
                let end_text = path_str(d, &["text"]);
                let (name, with_reason) = state_of_kind(&kind);
                state = json!(name);
                match name {
                    "Completed" => {
                        let output = match path(d, &["output_error"]) {
                            Some(err) => json!({"invalid": {
                                "raw": path(d, &["output"]).cloned().unwrap_or(Value::Null),
                                "error": err,
                            }}),
                            None => match path(d, &["output"]) {
                                Some(o) => o.clone(),
                                None => json!(end_text.clone().unwrap_or_default()),
                            },
                        };
                        let calls: Vec<Value> = self
                            .turn_events(s, t, c)
                            .iter()
                            .filter(|e| typ(e) == "tool/call")
                            .map(|e| {
                                json!({
                                    "name": path_str(data(e), &["name"]),
                                    "arguments": path(data(e), &["arguments"]).cloned().unwrap_or(Value::Null),
                                })
                            })
                            .collect();
                        rec.insert("text".into(), opt_str(end_text));
                        rec.insert(
                            "stop_reason".into(),
                            opt_str(with_reason.then_some(kind.clone())),
                        );
                        rec.insert("output".into(), output);
                        rec.insert("tool_calls".into(), Value::Array(calls));
                    }
                    "Interrupted" => {
                        rec.insert("text".into(), json!(self.deltas(s, t, c)));
                        rec.insert("cause".into(), json!(self.cause(s, t, e, &kind)));
                    }
                    "Failed" => {
                        let err = path(&reason, &["error"]).cloned().unwrap_or(Value::Null);
                        rec.insert("text".into(), opt_str(end_text));
                        rec.insert(
                            "error".into(),
                            json!({
                                "code": path_str(&err, &["code"]),
                                "message": path_str(&err, &["message"]),
                                "retryable": path(&err, &["retryable"]).and_then(Value::as_bool).unwrap_or(false),
                                "details": path(&err, &["details"]).cloned().unwrap_or(Value::Null),
                            }),
                        );
                    }
                    _ => {
                        rec.insert("text".into(), opt_str(end_text));
                        rec.insert("outcome".into(), json!(kind));
                        rec.insert("raw".into(), reason);
                    }
                }
            }
        }
        let mut out = Map::new();
        out.insert("state".into(), state);
        out.insert("session_id".into(), json!(s));
        out.insert("turn_id".into(), json!(t));
        out.insert("cursor".into(), json!(c.to_string()));
        out.extend(rec);
        Value::Object(out)
    }

    /// The Interrupted cause (§3).
    fn cause(&self, s: &str, t: &str, end: &Value, kind: &str) -> String {
        let d = data(end);
        if let Some(c) = path_str(d, &["reason", "cause"]) {
            return c;
        }
        if let Some(k) = path_str(d, &["reason", "reason", "kind"]) {
            return k;
        }
        if ["cancelled", "aborted", "CANCELLED"].contains(&kind) {
            return "cancelled".into();
        }
        let (first, start) = self.turn_start(s, t);
        let from = start.unwrap_or(first);
        let to = seq(end);
        let cancelled = self.events.iter().any(|e| {
            typ(e) == "session/end"
                && session(e) == s
                && path_str(data(e), &["status"]).as_deref() == Some("cancelled")
                && seq(e) > from
                && seq(e) < to
        });
        if cancelled {
            "cancelled".into()
        } else {
            "interrupted".into()
        }
    }

    /// Every turn existing at `c`, with its state record as of `c`.
    pub fn snapshot(&self, c: u64) -> Vec<Value> {
        self.turn_keys(c)
            .iter()
            .map(|(s, t)| self.state_record(s, t, c))
            .collect()
    }

    fn turn_rows(&self) -> Vec<Value> {
        let c = self.last_seq();
        let mut rows = Vec::new();
        for (s, t) in self.turn_keys(c) {
            let evs = self.turn_events(&s, &t, c);
            let (first, start) = self.turn_start(&s, &t);
            let rec = self.state_record(&s, &t, c);
            let state = rec["state"].as_str().map(str::to_string);
            let text_len = rec.get("text").and_then(Value::as_str).map(chars);
            let model_ends: Vec<&&Value> = evs.iter().filter(|e| typ(e) == "model/end").collect();
            let tokens = |k: &str| -> i64 {
                model_ends
                    .iter()
                    .map(|e| path_int(data(e), &["usage", k]).unwrap_or(0))
                    .sum()
            };
            let (end, finish_class) = match self.turn_end(&s, &t, c) {
                End::None => (None, None),
                End::Malformed(e) => (Some(seq(e)), None),
                End::Kind(e, _) => (Some(seq(e)), class_of_end(e)),
            };
            // An Interrupted turn whose cause is `cancelled` was cancelled, whatever its kind.
            let cancelled = state.as_deref() == Some("Interrupted")
                && rec.get("cause").and_then(Value::as_str) == Some("cancelled");
            let finish_class = if cancelled {
                Some("cancelled")
            } else {
                finish_class
            };
            let error_code = if state.as_deref() == Some("Failed") {
                rec["error"]["code"].as_str().map(str::to_string)
            } else {
                None
            };
            rows.push(json!({
                "root": self.root,
                "session": s,
                "turn": t,
                "is_root": s == self.root,
                "interval_open_seq": self.interval_at(start.unwrap_or(first)),
                // (ambiguous in the spec; as the reducer: its turn/start, else its first event)
                "start_seq": start.unwrap_or(first),
                "end_seq": end,
                "state": state,
                "stop_reason": rec.get("stop_reason").cloned().unwrap_or(Value::Null),
                "cause": rec.get("cause").cloned().unwrap_or(Value::Null),
                "outcome": rec.get("outcome").cloned().unwrap_or(Value::Null),
                "error_code": error_code,
                "text_len": text_len,
                "tool_calls": evs.iter().filter(|e| typ(e) == "tool/call").count(),
                "model_calls": model_ends.len(),
                "input_tokens": tokens("input_tokens"),
                "output_tokens": tokens("output_tokens"),
                "protocol_error": rec.get("protocol_error").and_then(Value::as_str).map(|p| p.parse::<i64>().unwrap()),
                "finish_class": finish_class,
            }));
        }
        rows
    }

    // ----- §4 errors

    /// The events that record an Error, with the Error and its source.
    fn recorded_errors(&self) -> Vec<(&Value, Value, &'static str)> {
        let mut out = Vec::new();
        for e in &self.events {
            match typ(e) {
                "turn/end" => {
                    if let Some(k) = path_str(data(e), &["reason", "kind"]) {
                        if state_of_kind(&k).0 == "Failed" {
                            let err = path(data(e), &["reason", "error"]).cloned();
                            out.push((e, err.unwrap_or(Value::Null), "turn"));
                        }
                    }
                }
                "model/end" => {
                    // an Error is an object: `"error": null` (or a bare string) records none
                    if let Some(err) = path(data(e), &["error"]).filter(|x| x.is_object()) {
                        out.push((e, err.clone(), "model"));
                    }
                }
                "run.failed" => {
                    let err = path(data(e), &["error"]).cloned();
                    out.push((e, err.unwrap_or(Value::Null), "run"));
                }
                _ => {}
            }
        }
        out
    }

    fn error_events(&self) -> Vec<&Value> {
        self.recorded_errors()
            .into_iter()
            .map(|(e, _, _)| e)
            .collect()
    }

    fn error_rows(&self) -> Vec<Value> {
        let c = self.last_seq();
        let mut rows = Vec::new();
        for (e, err, source) in self.recorded_errors() {
            let code = path_str(&err, &["code"]);
            let status = path_int(&err, &["details", "http_status"]);
            let reason = path_str(&err, &["details", "reason"]);
            let retryable = path(&err, &["retryable"])
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let expected = code
                .as_deref()
                .and_then(|k| retryable_rule(k, status, reason.as_deref()));
            let consistent = match (&code, status) {
                (Some(k), Some(st)) => status_ok(k, st),
                _ => None,
            };
            let (retried, recovered) = if source == "model" {
                match turn(e) {
                    None => (Some(false), Some(false)),
                    Some(t) => {
                        let later = self.events.iter().any(|x| {
                            typ(x) == "model/end"
                                && session(x) == session(e)
                                && turn(x) == Some(t)
                                && seq(x) > seq(e)
                        });
                        let rec = self.state_record(session(e), t, c);
                        (Some(later), Some(rec["state"] == json!("Completed")))
                    }
                }
            } else {
                (None, None)
            };
            rows.push(json!({
                "root": self.root,
                "session": session(e),
                "turn": turn(e),
                "seq": seq(e),
                "ts": ts(e),
                "source": source,
                "code": code,
                "message": path_str(&err, &["message"]),
                "retryable": retryable,
                "http_status": opt_int(status),
                "details_reason": reason,
                "retryable_expected": expected,
                "retryable_mismatch": expected.map(|x| x != retryable),
                "status_consistent": consistent,
                "retried": retried,
                "recovered": recovered,
            }));
        }
        rows
    }

    // ----- §4a tool calls and callbacks

    fn tool_call_rows(&self) -> Vec<Value> {
        let mut rows = Vec::new();
        for e in self.events.iter().filter(|e| typ(e) == "tool/call") {
            let call_id = path_str(data(e), &["call_id"]);
            let result = self.events.iter().find(|r| {
                typ(r) == "tool/result"
                    && call_id.is_some()
                    && path_str(data(r), &["call_id"]) == call_id
            });
            rows.push(json!({
                "root": self.root,
                "session": session(e),
                "turn": turn(e),
                "call_id": call_id,
                "seq": seq(e),
                "name": path_str(data(e), &["name"]),
                "arguments": path(data(e), &["arguments"]).cloned().unwrap_or(Value::Null),
                "status": result.and_then(|r| path_str(data(r), &["status"])),
                "detail": result.and_then(|r| path_str(data(r), &["detail"])),
            }));
        }
        rows
    }

    fn callback_rows(&self) -> Vec<Value> {
        let c = self.last_seq();
        let closes = self.callback_closes();
        let mut rows = Vec::new();
        for (j, cb) in self.events.iter().enumerate() {
            if typ(cb) != "callback/open" {
                continue;
            }
            let close = closes.get(&j).copied().filter(|(s, _)| *s <= c);
            rows.push(json!({
                "root": self.root,
                "session": session(cb),
                "turn": turn(cb),
                "callback_id": path_str(data(cb), &["callback_id"]),
                "kind": path_str(data(cb), &["kind"]),
                "title": path_str(data(cb), &["title"]),
                "open_seq": seq(cb),
                "close_seq": close.map(|x| x.0),
                "closed_by": close.map(|x| x.1),
            }));
        }
        rows
    }

    // ----- §5 runs

    fn run_rows(&self) -> Vec<Value> {
        let evs = &self.events;
        let mut rows = Vec::new();
        for (i, st) in evs.iter().enumerate() {
            if typ(st) != "run.started" {
                continue;
            }
            let run_id = path_str(data(st), &["run_id"]);
            let attempt = path_int(data(st), &["attempt"]);
            let settle = evs[i + 1..].iter().position(|e| {
                SETTLING.contains(&typ(e))
                    && path_str(data(e), &["run_id"]) == run_id
                    && path_int(data(e), &["attempt"]) == attempt
            });
            let settle = settle.map(|k| i + 1 + k);
            let next_start = evs[i + 1..]
                .iter()
                .position(|e| typ(e) == "run.started")
                .map(|k| i + 1 + k);
            let window_end = [settle, next_start]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(evs.len());
            let window = &evs[i + 1..window_end];
            let count = |f: &dyn Fn(&str) -> bool| window.iter().filter(|e| f(typ(e))).count();
            let mut row = json!({
                "root": self.root,
                "run_id": run_id,
                "attempt": opt_int(attempt),
                "start_seq": seq(st),
                "settle_seq": null,
                "settle": "unsettled",
                "output_status": null,
                "wait_for_kind": null,
                "assistant_text_len": null,
                "provisional_tail": false,
                "error_code": null,
                "assistant_deltas": count(&|t| t == "text/delta"),
                "reasoning_deltas": count(&|t| t == "reasoning/delta"),
                "progress_events": count(&|t| t == "progress"),
                "tool_events": count(&|t| t == "tool/call" || t == "tool/result"),
                "log_events": count(&|t| t == "log"),
                "interaction_events": count(&|t| t == "callback/open" || t == "callback/answer"),
            });
            match settle {
                Some(k) => {
                    let e = &evs[k];
                    let d = data(e);
                    row["settle_seq"] = json!(seq(e));
                    match typ(e) {
                        "run.completed" => {
                            row["settle"] = json!("completed");
                            row["output_status"] = opt_str(path_str(d, &["output", "status"]));
                            row["wait_for_kind"] =
                                opt_str(path_str(d, &["output", "waitFor", "kind"]));
                            row["assistant_text_len"] = opt_int(
                                path_str(d, &["output", "assistantText"]).map(|s| chars(&s)),
                            );
                        }
                        "run.failed" => {
                            row["settle"] = json!("failed");
                            row["error_code"] = opt_str(path_str(d, &["error", "code"]));
                        }
                        _ => row["settle"] = json!("cancelled"),
                    }
                }
                None => {
                    let tail = window
                        .last()
                        .is_some_and(|e| typ(e) == "text/delta" || typ(e) == "reasoning/delta");
                    row["provisional_tail"] = json!(tail);
                }
            }
            rows.push(row);
        }
        rows
    }

    // ----- agents (docs/semantics.md §8)

    fn agent_rows(&self) -> Vec<Value> {
        if self.events.is_empty() {
            return Vec::new();
        }
        let mut sessions: Vec<&str> = self.events.iter().map(session).collect();
        sessions.push(&self.root);
        sessions.sort();
        sessions.dedup();
        let (ivs, stray) = self.intervals();
        let gaps = self
            .events
            .windows(2)
            .filter(|w| seq(&w[1]) - seq(&w[0]) > 1)
            .count();
        let first = &self.events[0];
        let last = self.events.last().unwrap();
        vec![json!({
            "root": self.root,
            "events": self.events.len(),
            "sessions": sessions.len(),
            "first_seq": seq(first),
            "last_seq": seq(last),
            "first_ts": ts(first),
            "last_ts": ts(last),
            "intervals": ivs.len(),
            "stray_idles": stray,
            "seq_gaps": gaps,
        })]
    }

    /// Every table of this agent.
    pub fn tables(&self) -> Tables {
        let mut t = Tables::new();
        t.insert("intervals", self.interval_rows());
        t.insert("turns", self.turn_rows());
        t.insert("errors", self.error_rows());
        t.insert("tool_calls", self.tool_call_rows());
        t.insert("callbacks", self.callback_rows());
        t.insert("runs", self.run_rows());
        t.insert("agents", self.agent_rows());
        t
    }
}
