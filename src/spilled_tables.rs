//! The tables a question over raw logs reads, when the logs are too large to hold in memory
//! and the columns it reads are known ([`crate::plan_tables::Demand`]): the logs go through
//! spill partitions (keeping only the kinds of events those columns depend on, when they
//! depend on a few: [`runlog_core::ingest::spill`], `IngestOptions::keep`), each partition
//! is reduced and the tables asked for are built from it as Arrow batches with only the
//! columns read, and nothing is written but the partitions themselves. Every table but
//! `rejects` and `files` is rows per agent, so a partition's rows are whole; those two come
//! from the read's totals once every partition is assembled. The tables a spilled ingest
//! would write (every column of every table, through a temporary warehouse) are never made.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use datafusion::arrow::array::RecordBatch;

use crate::error::{Error, Result};
use crate::store;
use runlog_core::ingest::{IngestOptions, Ingested, Inputs};
use runlog_core::reduce::Derived;
use runlog_core::shard::SHARED_TABLES;
use runlog_core::table::Table;

/// Tables as record batches.
type Tables = BTreeMap<Table, Vec<RecordBatch>>;

/// The batches of `tables`, each with the columns `columns` names for it (none: a count
/// of its rows), from `inputs` read through `partitions` spill partitions under
/// `spill_dir` (removed at the end); the partitions' batches in partition order. `events`,
/// `rejects` and `files` need every line read: not with `opts.keep`.
pub fn tables(
    inputs: &Inputs,
    opts: &IngestOptions,
    tables: &[Table],
    columns: &BTreeMap<Table, Vec<String>>,
    spill_dir: &Path,
    partitions: usize,
) -> Result<Tables> {
    let whole_read = |t: &Table| *t == Table::Events || SHARED_TABLES.contains(t);
    if opts.keep.is_some() {
        if let Some(t) = tables.iter().find(|t| whole_read(t)) {
            return Err(Error::Invalid(format!(
                "the table {t} needs every event, not some kinds only"
            )));
        }
    }
    let read = |t: Table| columns.get(&t).map(Vec::as_slice).unwrap_or_default();
    let per_agent: Vec<Table> = tables
        .iter()
        .copied()
        .filter(|t| !SHARED_TABLES.contains(t))
        .collect();
    let built: Mutex<Vec<(usize, Tables)>> = Mutex::new(Vec::new());
    let totals = runlog_core::ingest::spill::ingest_inputs_partitioned::<Error>(
        inputs,
        opts,
        spill_dir,
        partitions.max(1),
        |part| {
            let ing = Ingested {
                agents: part.agents,
                files: part.files,
                ..Default::default()
            };
            let derived = runlog_core::reduce_all(&ing);
            let batches = per_agent
                .iter()
                .map(|&t| {
                    let b = match t {
                        Table::Events => crate::events_projected::events_batches_of(&ing, read(t))?,
                        _ => vec![store::derived_batch_of(&derived, t, Some(read(t)))?],
                    };
                    Ok((t, b))
                })
                .collect::<Result<Tables>>()?;
            built
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((part.index, batches));
            Ok(())
        },
    )?;
    let mut built = built.into_inner().unwrap_or_else(|e| e.into_inner());
    built.sort_by_key(|(index, _)| *index);
    let mut out: Tables = tables.iter().map(|&t| (t, Vec::new())).collect();
    for (_, batches) in built {
        for (table, b) in batches {
            let all = out.entry(table).or_default();
            all.extend(b.into_iter().filter(|b| b.num_rows() > 0));
        }
    }
    let shared: Vec<Table> = tables
        .iter()
        .copied()
        .filter(|t| SHARED_TABLES.contains(t))
        .collect();
    if !shared.is_empty() {
        out.extend(store::some_batches(&totals, &Derived::default(), &shared)?);
    }
    Ok(out)
}
