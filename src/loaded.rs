//! Logs read into memory: every file read, validated and ordered, every agent reduced
//! (`runlog_core`), with the accounting — what `query`, `report` and `replay` over log
//! PATHs and the tests work on, and what [`crate::pipeline`] writes as a warehouse. Tables
//! of it as Arrow batches come from [`crate::store`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;
use runlog_core::ingest::{self, IngestOptions, Ingested};
use runlog_core::reduce::Derived;
use runlog_core::table::Table;
use runlog_core::{reduce_all, shard, summarize, Summary};

use crate::error::Result;
use crate::store;

/// Everything one ingest produced, in memory.
pub struct Loaded {
    pub ingested: Ingested,
    pub derived: Derived,
    pub summary: Summary,
}

impl Loaded {
    /// Every table as record batches.
    pub fn batches(&self) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
        store::all_batches(&self.ingested, &self.derived)
    }

    /// The named tables as record batches.
    pub fn some_batches(&self, tables: &[Table]) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
        store::some_batches(&self.ingested, &self.derived, tables)
    }
}

/// Reads, validates, orders and reduces the given files and folders.
pub fn load(paths: &[PathBuf], opts: &IngestOptions) -> Result<Loaded> {
    load_shard(paths, opts, None)
}

/// Like [`load`], keeping only the agents of one shard (filtered after assembly, before
/// the reducer); the file accounting and rejects stay those of the whole input.
pub fn load_shard(
    paths: &[PathBuf],
    opts: &IngestOptions,
    shard: Option<shard::Shard>,
) -> Result<Loaded> {
    load_inputs(&ingest::Inputs::discover(paths)?, opts, shard)
}

/// [`load_shard`] of inputs already resolved ([`inputs::resolve`]: local files and
/// objects downloaded from stores, each shown by its own name).
pub fn load_inputs(
    inputs: &ingest::Inputs,
    opts: &IngestOptions,
    shard: Option<shard::Shard>,
) -> Result<Loaded> {
    let start = Instant::now();
    let mut ingested = ingest::ingest_inputs(inputs, opts)?;
    if let Some(s) = shard {
        ingested.retain_shard(&s);
    }
    let derived = reduce_all(&ingested);
    let summary = summarize(
        &ingested,
        derived.intervals.len() as u64,
        start.elapsed().as_secs_f64(),
    );
    Ok(Loaded {
        ingested,
        derived,
        summary,
    })
}
