//! Spill: ingest logs larger than memory.
//!
//! The in-memory pipeline holds every event of the input at once, so its peak grows with
//! the input. With a spill, ingest works in two passes instead:
//!
//! 1. Read every file (in parallel) and append each decoded canonical event to one of `P`
//!    partition files on disk, chosen by a stable hash of its `root`; imported files
//!    (docs/importers/) are small and stay in memory until their roots are resolved, then go
//!    to their partitions too. Rejects and per-file line counts are kept in memory.
//! 2. For each partition in turn: read it back, assemble its agents (order, duplicates,
//!    conflicts), reduce them, and hand the result to the caller, which writes its Parquet
//!    parts and drops it. Memory holds one partition's agents at a time.
//!
//! Every agent's events land in one partition, so each partition is complete on its own;
//! the union of the partitions' tables is exactly the in-memory ingest's (a test checks
//! it). The partition files live in a temporary folder that is removed at the end; where
//! that folder is, and how the partitions' tables are written and committed, is the
//! caller's (`runlog::pipeline`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::partitions::{lock, read_partition, Spill};
use super::{self as ingest, Accounting, Agent, IngestOptions, Ingested};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::import::Format;

/// One partition's agents, assembled.
pub struct Partition {
    pub index: usize,
    pub agents: Vec<Agent>,
    /// The input files, indexed by `Event::file` (names and formats; their accounting is
    /// complete only in the [`Totals`]).
    pub files: Vec<ingest::FileSummary>,
}

/// What a partitioned ingest read, besides the partitions: the files (their accounting
/// complete once every partition was assembled), the rejects, the skipped files.
pub type Totals = Ingested;

/// Ingests `paths` through `partitions` spill partitions under `spill_dir` (created, and
/// removed at the end), calling `each` with every partition's agents (from as many threads
/// as rayon has, one partition per thread at a time, in no set order). Returns the files'
/// accounting and the rejects (with no agents).
pub fn ingest_partitioned<E: From<Error> + Send>(
    paths: &[PathBuf],
    opts: &IngestOptions,
    spill_dir: &Path,
    partitions: usize,
    each: impl Fn(Partition) -> Result<(), E> + Sync,
) -> Result<Totals, E> {
    match ingest::Inputs::discover(paths) {
        Ok(inputs) => ingest_inputs_partitioned(&inputs, opts, spill_dir, partitions, each),
        Err(e) => Err(e.into()),
    }
}

/// [`ingest_partitioned`] of inputs already found (each shown by its name).
pub fn ingest_inputs_partitioned<E: From<Error> + Send>(
    inputs: &ingest::Inputs,
    opts: &IngestOptions,
    spill_dir: &Path,
    partitions: usize,
    each: impl Fn(Partition) -> Result<(), E> + Sync,
) -> Result<Totals, E> {
    let files = &inputs.files;
    let result = (|| -> Result<Totals, E> {
        let spill = Arc::new(Spill::create(spill_dir, partitions)?);
        let mut spill_opts = opts.clone();
        spill_opts.spill = Some(spill.clone());
        // Pass 1: every file read, canonical events spilled as they are decoded.
        let reads: Vec<ingest::FileRead> = files
            .par_iter()
            .enumerate()
            .map(|(i, input)| {
                let f = super::database::open(input, opts.format)?;
                ingest::read_stream_at(i as u32, &input.name, &input.rel, f, &spill_opts)
            })
            .collect::<Result<_>>()?;
        drop(spill_opts);
        let mut summaries = Vec::with_capacity(reads.len());
        let mut imported = Vec::with_capacity(reads.len());
        let mut rejects = Vec::new();
        let mut held: Vec<Vec<Event>> = Vec::with_capacity(reads.len());
        for mut fr in reads {
            if fr.summary.format.is_empty() {
                fr.summary.format = Format::Runlog.name().to_string();
            }
            imported.push(!matches!(fr.format, Format::Runlog | Format::Auto));
            summaries.push(fr.summary);
            rejects.extend(fr.rejects);
            held.push(fr.events);
        }
        // Imported events: roots resolved across files, then spilled like the rest.
        ingest::resolve_imported_roots(&mut held, &imported);
        for mut evs in held {
            spill.push(&mut evs);
        }
        let spill = Arc::try_unwrap(spill)
            .map_err(|_| Error::Invalid("spill still shared after reading".into()))?;
        let parts = spill.finish()?;
        // Pass 2: each partition read back, assembled and handed over, `width` partitions
        // at a time, each on its own thread from start to end: one partition's write (its
        // file syncs, its single-threaded steps) overlaps another's assembly, and no more
        // than `width` partitions are ever in memory (a rayon loop over partitions could
        // start another one on a thread waiting inside `each`).
        let names: Vec<String> = summaries.iter().map(|f| f.file.clone()).collect();
        let width = rayon::current_num_threads().clamp(1, parts.len().max(1));
        let next = AtomicUsize::new(0);
        let acc = Mutex::new(Accounting::new(summaries.len()));
        let failed: Mutex<Option<E>> = Mutex::new(None);
        let one = |k: usize, buf: &mut Vec<u8>| -> Result<(), E> {
            let groups = read_partition(&parts[k], buf)?;
            let _ = std::fs::remove_file(&parts[k].path);
            let mut a = Accounting::new(names.len());
            let parts = groups.into_iter().map(ingest::Part::OneRoot).collect();
            let agents = ingest::assemble_events(parts, &names, &imported, &mut a);
            lock(&acc).merge(a);
            each(Partition {
                index: k,
                agents,
                files: summaries.clone(),
            })
        };
        std::thread::scope(|s| {
            for _ in 0..width {
                s.spawn(|| {
                    let mut buf = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= parts.len() || lock(&failed).is_some() {
                            break;
                        }
                        if let Err(e) = one(k, &mut buf) {
                            lock(&failed).get_or_insert(e);
                            break;
                        }
                    }
                });
            }
        });
        if let Some(e) = lock(&failed).take() {
            return Err(e);
        }
        let mut acc = acc.into_inner().unwrap_or_else(|e| e.into_inner());
        acc.apply(&mut summaries, &imported);
        rejects.append(&mut acc.conflicts);
        ingest::sort_rejects(&mut rejects, &names);
        let mut totals = Ingested {
            files: summaries,
            skipped_files: inputs.skipped.clone(),
            agents: Vec::new(),
            rejects,
        };
        ingest::excerpt_conflicts(files, &mut totals, opts);
        Ok(totals)
    })();
    let _ = std::fs::remove_dir_all(spill_dir);
    result
}
