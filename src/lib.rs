//! runlog: event-log analytics and replay for AI-agent runtimes.
//!
//! The pipeline, one module per stage: [`ingest`] (files → validated, ordered events and
//! rejects) → [`reduce`] (events → intervals, turns, errors, tool calls, callbacks, runs)
//! → [`store`] (Arrow batches, Parquet warehouse) → [`query`] / [`report`] (rendered as
//! text, JSON, Markdown or [`html`]) / [`replay`].
//! [`gen`] writes production-like logs for tests, demos and benchmarks.

pub mod bench;
pub mod decode;
pub mod engine;
pub mod error;
pub mod event;
pub mod gen;
pub mod html;
pub mod import;
pub mod ingest;
pub mod location;
pub mod query;
pub mod reduce;
pub mod replay;
pub mod report;
pub mod shard;
pub mod spill;
pub mod store;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;
use rayon::prelude::*;
use serde::Serialize;

pub use error::{Error, Location, Result};
pub use event::Event;
pub use ingest::{IngestOptions, Ingested};
pub use reduce::{Derived, Reducer};

/// Reduces every agent, in parallel; rows come out in `root` order.
pub fn reduce_all(ing: &Ingested) -> Derived {
    let parts: Vec<Derived> = ing
        .agents
        .par_iter()
        .map(|a| reduce::reduce_agent(&a.root, &a.events))
        .collect();
    Derived::concat(parts)
}

/// The accounting of one ingest, printed after it and stored in the warehouse manifest.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub files: u64,
    pub skipped_files: u64,
    pub bytes: u64,
    pub lines_read: u64,
    pub blank_lines: u64,
    pub kept: u64,
    pub duplicates: u64,
    pub rejects: u64,
    pub agents: u64,
    pub intervals: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    /// `lines_read == kept + duplicates + rejects`.
    pub adds_up: bool,
    pub per_file: Vec<ingest::FileSummary>,
}

/// Everything one ingest produced, in memory.
pub struct Loaded {
    pub ingested: Ingested,
    pub derived: Derived,
    pub summary: Summary,
}

impl Loaded {
    /// Every table as record batches.
    pub fn batches(&self) -> Result<BTreeMap<&'static str, Vec<RecordBatch>>> {
        store::all_batches(&self.ingested, &self.derived)
    }

    /// The named tables as record batches.
    pub fn some_batches(
        &self,
        tables: &[&'static str],
    ) -> Result<BTreeMap<&'static str, Vec<RecordBatch>>> {
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
    let start = Instant::now();
    let mut ingested = ingest::ingest_paths(paths, opts)?;
    if let Some(s) = shard {
        s.retain(&mut ingested);
    }
    let derived = reduce_all(&ingested);
    let summary = summarize(&ingested, &derived, start.elapsed().as_secs_f64());
    Ok(Loaded {
        ingested,
        derived,
        summary,
    })
}

/// Reads, validates and orders the given files and folders, then writes the warehouse at
/// `dir` as one commit, reducing while the `events` table is written. `check` sees the
/// ingest's totals (lines read, rejects) before anything is written and may refuse it.
/// The summary's `seconds` covers reading and reducing.
pub fn load_into_warehouse(
    paths: &[PathBuf],
    opts: &IngestOptions,
    dir: &std::path::Path,
    check: impl FnOnce(&ingest::FileSummary) -> Result<()>,
) -> Result<Loaded> {
    let start = Instant::now();
    let ingested = ingest::ingest_paths(paths, opts)?;
    check(&ingested.totals())?;
    let (_, derived, summary) = store::write_warehouse_deriving(dir, &ingested, || {
        let derived = reduce_all(&ingested);
        let summary = summarize(&ingested, &derived, start.elapsed().as_secs_f64());
        let value = serde_json::to_value(&summary)?;
        Ok((derived, value, summary))
    })?;
    Ok(Loaded {
        ingested,
        derived,
        summary,
    })
}

/// The summary of an ingest that took `seconds`.
pub fn summarize(ing: &Ingested, d: &Derived, seconds: f64) -> Summary {
    let t = ing.totals();
    Summary {
        files: ing.files.len() as u64,
        skipped_files: ing.skipped_files.len() as u64,
        bytes: t.bytes,
        lines_read: t.lines,
        blank_lines: t.blank,
        kept: t.kept,
        duplicates: t.duplicates,
        rejects: t.rejects,
        agents: ing.agents.len() as u64,
        intervals: d.intervals.len() as u64,
        seconds,
        mb_per_s: if seconds > 0.0 {
            t.bytes as f64 / 1e6 / seconds
        } else {
            0.0
        },
        adds_up: t.lines == t.kept + t.duplicates + t.rejects,
        per_file: ing.files.clone(),
    }
}
