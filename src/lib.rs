//! runlog: event-log analytics and replay for AI-agent runtimes.
//!
//! The pipeline, one module per stage, data flowing one way: the core crate
//! (`runlog_core`, re-exported here: [`event`] → [`decode`] → [`import`] → [`ingest`] →
//! [`reduce`]) turns files into validated, ordered events, rejects and derived rows; then
//! [`store`] (Arrow schemas and batches, Parquet files) → [`commit`] (the warehouse's
//! version log, lock and garbage collection, on any [`objstore`]) → [`pipeline`] (the one write path: inputs
//! resolved by [`inputs`],
//! commit mode, memory, `--max-rejects`) → [`query`] / [`report`] (rendered as text, JSON,
//! Markdown or [`html`]; [`baseline`] compares two reports, testing shifts with
//! [`stats`]) / [`replay`] (and its pages, [`timeline`]). [`engine`] runs the SQL locally
//! or on Ballista;
//! [`collect`] receives OTLP/HTTP exports and commits them in batches through [`pipeline`];
//! [`gen`] writes production-like logs for tests, demos and benchmarks.

pub mod append;
pub mod baseline;
pub mod bench;
pub mod collect;
pub mod commit;
pub mod engine;
pub mod error;
pub mod events_projected;
pub mod export;
pub mod html;
pub mod inputs;
pub mod location;
pub mod objstore;
pub mod owner;
pub mod pipeline;
pub mod plan_tables;
pub mod query;
pub mod replay;
pub mod report;
pub mod stats;
pub mod store;
pub mod timeline;

/// The core stages (no Arrow or DataFusion), under the names they had in this crate.
pub use runlog_core::{decode, event, import, ingest, reduce, shard, table};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;

pub use error::{Error, Location, Result};
pub use ingest::{IngestOptions, Ingested};
pub use reduce::{Derived, Reducer};
pub use runlog_core::{reduce_all, summarize, Event, Summary};
pub use table::Table;

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
