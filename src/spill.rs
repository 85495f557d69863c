//! Spill: ingest logs larger than memory.
//!
//! The in-memory pipeline holds every event of the input at once, so its peak grows with
//! the input. With a spill, ingest works in two passes instead:
//!
//! 1. Read every file (in parallel) and append each decoded canonical event to one of `P`
//!    partition files on disk, chosen by a stable hash of its `root`; imported files
//!    (IMPORTERS.md) are small and stay in memory until their roots are resolved, then go
//!    to their partitions too. Rejects and per-file line counts are kept in memory.
//! 2. For each partition in turn: read it back, assemble its agents (order, duplicates,
//!    conflicts), reduce them, and hand the result to the caller, which writes its Parquet
//!    parts and drops it. Memory holds one partition's agents at a time.
//!
//! Every agent's events land in one partition, so each partition is complete on its own;
//! the union of the partitions' tables is exactly the in-memory ingest's (a test checks
//! it). The partition files live in a temporary folder that is removed at the end.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ingest::{IngestOptions, Ingested};

/// `runlog ingest --spill-partitions P`: the whole ingest through a spill, with the same
/// commit as the in-memory one (lock, Parquet parts under unique names, one atomic
/// manifest rename, garbage collection). `check` sees the summary before the commit and
/// may refuse it (`--max-rejects`); nothing is published then.
pub fn ingest_to_warehouse(
    paths: &[PathBuf],
    opts: &IngestOptions,
    warehouse: &Path,
    partitions: usize,
    check: impl FnOnce(&crate::Summary) -> Result<()>,
) -> Result<crate::Summary> {
    use crate::store;
    use std::collections::BTreeMap;
    let start = std::time::Instant::now();
    std::fs::create_dir_all(warehouse).map_err(|e| Error::io(warehouse, e))?;
    let _lock = store::WarehouseLock::acquire(warehouse)?;
    let id = store::new_ingest_id();
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let (mut agents, mut intervals) = (0u64, 0u64);
    // Per-agent tables go out per partition; the shared ones (rejects, files) once at the end.
    let per_agent: Vec<&'static str> = store::TABLES
        .iter()
        .copied()
        .filter(|t| !crate::shard::SHARED_TABLES.contains(t) && *t != "events")
        .collect();
    let spill_dir = warehouse.join(format!("_spill-{id}"));
    let totals = runlog_core::ingest::spill::ingest_partitioned::<Error>(
        paths,
        opts,
        &spill_dir,
        partitions,
        |part| {
            let ingested = Ingested {
                agents: part.agents,
                files: part.files,
                ..Default::default()
            };
            let derived = crate::reduce_all(&ingested);
            agents += ingested.agents.len() as u64;
            intervals += derived.intervals.len() as u64;
            // `events` is built while it is written; the other tables are small.
            let pid = format!("{id}-p{:05}", part.index);
            let (events, written) = rayon::join(
                || store::write_events_parts(warehouse, &pid, &ingested, None),
                || -> Result<_> {
                    let batches = store::some_batches(&ingested, &derived, &per_agent)?;
                    store::write_parts(warehouse, &pid, &batches)
                },
            );
            files
                .entry("events".to_string())
                .or_default()
                .append(&mut events?);
            for (table, mut names) in written? {
                files.entry(table).or_default().append(&mut names);
            }
            Ok(())
        },
    )?;
    let mut summary = crate::summarize(&totals, &crate::Derived::default(), 0.0);
    summary.agents = agents;
    summary.intervals = intervals;
    check(&summary)?;
    let shared = store::some_batches(
        &totals,
        &crate::Derived::default(),
        crate::shard::SHARED_TABLES,
    )?;
    for (table, mut names) in store::write_parts(warehouse, &format!("{id}-shared"), &shared)? {
        files.entry(table).or_default().append(&mut names);
    }
    for t in store::TABLES {
        files.entry(t.to_string()).or_default();
    }
    summary.seconds = start.elapsed().as_secs_f64();
    summary.mb_per_s = summary.bytes as f64 / 1e6 / summary.seconds.max(1e-9);
    store::commit_full(warehouse, id, files, serde_json::to_value(&summary)?)?;
    Ok(summary)
}
