//! Replay from a warehouse: one agent's events read back from the `events` table, for the
//! core's replay ([`runlog_core::replay`]: timeline, snapshot, live follow).
//!
//! The root id is only ever a value: from a warehouse, events are read with a DataFusion
//! filter expression, never with SQL text built from it.

use std::path::Path;

use datafusion::prelude::{col, lit, ParquetReadOptions, SessionContext};

use crate::error::Result;
use crate::store::events_from_batch as batch_to_events;
use runlog_core::event::Event;
pub use runlog_core::replay::{follow, snapshot, timeline, timeline_entry};
use runlog_core::table::Table;

/// Reads one agent's events from a warehouse, in `seq` order.
pub async fn events_from_warehouse(dir: &Path, root: &str) -> Result<Vec<Event>> {
    let wh = crate::objstore::Root::open(dir)?;
    let manifest = crate::commit::read_latest(&wh)?;
    let files = crate::commit::table_locations(&wh, &manifest, Table::Events)?;
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
        .table(Table::Events.name())
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
