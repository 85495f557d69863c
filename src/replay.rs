//! Replay from a warehouse: one agent's events read back from the `events` table, for the
//! core's replay ([`runlog_core::replay`]: timeline, snapshot, live follow).
//!
//! The root id is only ever a value: from a warehouse, events are read with a DataFusion
//! filter expression, never with SQL text built from it.

use std::path::Path;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimestampMicrosecondType};
use datafusion::prelude::{col, lit, ParquetReadOptions, SessionContext};

use crate::error::{Error, Result};
use crate::event::{Event, PayloadIndex};
pub use runlog_core::replay::{follow, snapshot, timeline, timeline_entry};

/// Reads one agent's events from a warehouse, in `seq` order.
pub async fn events_from_warehouse(dir: &Path, root: &str) -> Result<Vec<Event>> {
    let wh = crate::objstore::Root::open(dir)?;
    let manifest = crate::commit::read_latest(&wh)?;
    let files = crate::commit::table_locations(&wh, &manifest, "events")?;
    let ctx = SessionContext::new();
    wh.register_store(&ctx)?;
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

/// Reads the events of several agents from a context's `events` table (a warehouse's, or
/// one built from logs in memory), each agent's in `seq` order.
pub async fn events_of_roots(
    ctx: &SessionContext,
    roots: &[String],
) -> Result<std::collections::BTreeMap<String, Vec<Event>>> {
    let mut out: std::collections::BTreeMap<String, Vec<Event>> = Default::default();
    if roots.is_empty() {
        return Ok(out);
    }
    let df = ctx
        .table("events")
        .await?
        .filter(col("root").in_list(roots.iter().map(|r| lit(r.as_str())).collect(), false))?;
    for b in df.collect().await? {
        for e in batch_to_events(&b)? {
            out.entry(e.root.to_string()).or_default().push(e);
        }
    }
    for evs in out.values_mut() {
        evs.sort_by_key(|e| e.seq);
    }
    Ok(out)
}

fn batch_to_events(b: &RecordBatch) -> Result<Vec<Event>> {
    let get = |name: &str| {
        b.column_by_name(name).ok_or_else(|| {
            Error::Invalid(format!(
                "the events table has no column {name}: not a runlog warehouse, or damaged"
            ))
        })
    };
    let wrong = |name: &str, want: &str, got: &DataType| {
        Error::Invalid(format!(
            "the events table's column {name} is {got}, not {want}: not a runlog warehouse, or damaged"
        ))
    };
    // Parquet strings may come back as views: normalise to plain UTF-8 arrays.
    let text = |name: &str| -> Result<ArrayRef> {
        let c = get(name)?;
        if !matches!(
            c.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ) {
            return Err(wrong(name, "a string", c.data_type()));
        }
        Ok(cast(c, &DataType::Utf8)?)
    };
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
    let int = |name: &str| {
        let c = get(name)?;
        c.as_primitive_opt::<Int64Type>()
            .ok_or_else(|| wrong(name, "Int64", c.data_type()))
    };
    let (seq, line) = (int("seq")?, int("line")?);
    let ts = get("ts")?;
    let ts = ts
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| wrong("ts", "a timestamp in microseconds", ts.data_type()))?;
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
