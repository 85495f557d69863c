//! Replay: one agent's timeline (the state record each event changed), a snapshot of every
//! turn's state as of a cursor, and a live monitor that reduces events as they arrive.
//! Where the events come from (a warehouse, logs read in memory) is the caller's business.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use serde_json::{json, Value};

use crate::decode;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::reduce::{Applied, Reducer};

/// One line of a timeline.
pub fn timeline_entry(r: &Reducer, ev: &Event, applied: &Applied) -> Value {
    json!({
        "cursor": ev.seq.to_string(),
        "type": ev.kind.as_str(),
        "session": ev.session.as_str(),
        "turn": ev.turn.as_deref(),
        "state": applied.turn.map(|t| r.state_record(t, Some(ev.seq))),
    })
}

/// The timeline of one agent's events (in `seq` order): one JSON value per event.
pub fn timeline(root: &str, events: &[Event]) -> Vec<Value> {
    let mut r = Reducer::new(root, true);
    let mut out = Vec::with_capacity(events.len());
    for ev in events {
        if let Some(a) = r.apply(ev) {
            out.push(timeline_entry(&r, ev, &a));
        }
    }
    out
}

/// Every turn started at or before `at`, with its state record as of cursor `at`.
pub fn snapshot(root: &str, events: &[Event], at: u64) -> Vec<Value> {
    let mut r = Reducer::new(root, true);
    for ev in events.iter().take_while(|e| e.seq <= at) {
        r.apply(ev);
    }
    r.turn_ids().map(|t| r.state_record(t, Some(at))).collect()
}

/// Follows a live stream of events (one JSON line each), reducing each agent as its events
/// arrive and writing one timeline line per event at once. Bad lines are reported on
/// `errors` with their line number and skipped. Returns the number of events applied.
pub fn follow(input: impl BufRead, out: &mut dyn Write, errors: &mut dyn Write) -> Result<u64> {
    let mut reducers: HashMap<String, Reducer> = HashMap::new();
    let mut applied_count = 0;
    for (i, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(|e| Error::io("<stdin>", e))?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let ev = match decode::parse_line(line) {
            Ok(ev) => ev,
            Err(reason) => {
                let _ = writeln!(errors, "<stdin>:{}: {reason}", i + 1);
                continue;
            }
        };
        let r = reducers
            .entry(ev.root.to_string())
            .or_insert_with(|| Reducer::new(&ev.root, true));
        match r.apply(&ev) {
            Some(a) => {
                applied_count += 1;
                let entry = timeline_entry(r, &ev, &a);
                writeln!(out, "{entry}").map_err(|e| Error::io("<stdout>", e))?;
                out.flush().map_err(|e| Error::io("<stdout>", e))?;
            }
            None => {
                let _ = writeln!(
                    errors,
                    "<stdin>:{}: seq {} of root {:?} is not after the last one; skipped",
                    i + 1,
                    ev.seq,
                    ev.root
                );
            }
        }
    }
    Ok(applied_count)
}
