//! The derived tables a question over raw logs reads, when the logs are too large to hold in
//! memory and the question depends on a few kinds of events only
//! ([`crate::plan_tables::Demand`]): the logs go through spill partitions that keep only
//! those kinds ([`runlog_core::ingest::spill`], `IngestOptions::keep`), each partition is
//! reduced and the tables asked for are built from it as Arrow batches, and nothing is
//! written but the partitions themselves. A question that keeps some kinds reads only
//! tables of rows per agent, so a partition's rows are whole; the tables a spilled ingest
//! would write for it (every table, through a temporary warehouse) are never made.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use datafusion::arrow::array::RecordBatch;

use crate::error::{Error, Result};
use crate::store;
use runlog_core::ingest::{IngestOptions, Ingested, Inputs};
use runlog_core::shard::SHARED_TABLES;
use runlog_core::table::Table;

/// Tables as record batches.
type Tables = BTreeMap<Table, Vec<RecordBatch>>;

/// The batches of `tables` (derived tables of rows per agent only) from `inputs` read
/// through `partitions` spill partitions under `spill_dir` (removed at the end), the
/// partitions' batches in partition order.
pub fn derived_tables(
    inputs: &Inputs,
    opts: &IngestOptions,
    tables: &[Table],
    spill_dir: &Path,
    partitions: usize,
) -> Result<Tables> {
    if let Some(t) = tables
        .iter()
        .find(|t| **t == Table::Events || SHARED_TABLES.contains(t))
    {
        return Err(Error::Invalid(format!(
            "the table {t} is not built partition by partition"
        )));
    }
    let built: Mutex<Vec<(usize, Tables)>> = Mutex::new(Vec::new());
    runlog_core::ingest::spill::ingest_inputs_partitioned::<Error>(
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
            let batches = store::some_batches(&ing, &derived, tables)?;
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
    Ok(out)
}
