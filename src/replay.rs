//! Replay: one agent's timeline (the state record each event changed), a snapshot of every
//! turn's state as of a cursor, and a live monitor that reduces events as they arrive.
//!
//! The root id is only ever a value: from a warehouse, events are read with a DataFusion
//! filter expression, never with SQL text built from it.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimestampMicrosecondType};
use datafusion::prelude::{col, lit, ParquetReadOptions, SessionContext};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::event::{Event, PayloadIndex};
use crate::ingest;
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

/// Reads one agent's events from a warehouse, in `seq` order.
pub async fn events_from_warehouse(dir: &Path, root: &str) -> Result<Vec<Event>> {
    let manifest = crate::store::read_manifest(dir)?;
    let files: Vec<String> = manifest
        .tables
        .get("events")
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|rel| dir.join(rel).to_string_lossy().into_owned())
        .collect();
    let ctx = SessionContext::new();
    let mut events = Vec::new();
    for f in files {
        let df = ctx
            .read_parquet(f, ParquetReadOptions::default())
            .await?
            .filter(col("root").eq(lit(root)))?
            .sort(vec![col("seq").sort(true, false)])?;
        for b in df.collect().await? {
            events.extend(batch_to_events(&b)?);
        }
    }
    events.sort_by_key(|e| e.seq);
    Ok(events)
}

fn batch_to_events(b: &RecordBatch) -> Result<Vec<Event>> {
    let get = |name: &str| {
        b.column_by_name(name)
            .ok_or_else(|| Error::Invalid(format!("events table has no column {name}")))
    };
    // Parquet strings may come back as views: normalise to plain UTF-8 arrays.
    let text = |name: &str| -> Result<ArrayRef> { Ok(cast(get(name)?, &DataType::Utf8)?) };
    let (root, session, turn, kind, data) = (
        text("root")?,
        text("session")?,
        text("turn")?,
        text("type")?,
        text("data")?,
    );
    let (root, session, turn, kind, data) = (
        root.as_string::<i32>(),
        session.as_string::<i32>(),
        turn.as_string::<i32>(),
        kind.as_string::<i32>(),
        data.as_string::<i32>(),
    );
    let seq = get("seq")?.as_primitive::<Int64Type>();
    let ts = get("ts")?.as_primitive::<TimestampMicrosecondType>();
    let line = get("line")?.as_primitive::<Int64Type>();
    Ok((0..b.num_rows())
        .map(|i| Event {
            seq: seq.value(i) as u64,
            ts: ts.value(i),
            root: root.value(i).into(),
            session: session.value(i).into(),
            turn: (!turn.is_null(i)).then(|| turn.value(i).into()),
            kind: kind.value(i).into(),
            data: data.value(i).to_string(),
            file: 0,
            line: line.value(i) as u64,
            index: PayloadIndex::of(kind.value(i), data.value(i)),
        })
        .collect())
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
        let ev = match ingest::parse_line(line) {
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
