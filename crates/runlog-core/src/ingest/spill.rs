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
//! Under [`IngestOptions::keep`] only the events of the kinds kept are spilled; every other
//! line leaves a [`Blocker`](super::keep::Blocker) in memory, listed by the partition of its
//! root, and each partition is settled against its own blockers ([`super::keep`]) once
//! assembled. (Imported files are read whole: when one is among the inputs, the read is
//! done again keeping every event.)
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

use super::keep::{self, Blockers};
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
    let result = match partitioned(inputs, opts, spill_dir, partitions, &each) {
        Ok(None) => {
            let _ = std::fs::remove_dir_all(spill_dir);
            let whole = IngestOptions {
                keep: None,
                ..opts.clone()
            };
            partitioned(inputs, &whole, spill_dir, partitions, &each).and_then(|t| {
                t.ok_or_else(|| Error::Invalid("a whole read asked to be done again".into()).into())
            })
        }
        Ok(Some(t)) => Ok(t),
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_dir_all(spill_dir);
    result
}

/// [`ingest_inputs_partitioned`], or `None` when the read kept some kinds only and an
/// imported file was among the inputs (it must then be done again keeping every event).
fn partitioned<E: From<Error> + Send>(
    inputs: &ingest::Inputs,
    opts: &IngestOptions,
    spill_dir: &Path,
    partitions: usize,
    each: &(impl Fn(Partition) -> Result<(), E> + Sync),
) -> Result<Option<Totals>, E> {
    let files = &inputs.files;
    (|| -> Result<Option<Totals>, E> {
        let spill = Arc::new(Spill::create(spill_dir, partitions)?);
        let mut spill_opts = opts.clone();
        spill_opts.spill = Some(spill.clone());
        // Pass 1: every file read, canonical events spilled as they are decoded.
        let reads: Vec<ingest::FileRead> = files
            .par_iter()
            .enumerate()
            .map(|(i, input)| {
                let mut f = super::database::open(input, opts.format)?;
                let row_rejects = f.take_rejects();
                let mut r =
                    ingest::read_stream_at(i as u32, &input.name, &input.rel, f, &spill_opts)?;
                super::database::add_rejects(&mut r, &input.name, row_rejects);
                Ok(r)
            })
            .collect::<Result<_>>()?;
        drop(spill_opts);
        let mut summaries = Vec::with_capacity(reads.len());
        let mut imported = Vec::with_capacity(reads.len());
        let mut rejects = Vec::new();
        let mut held: Vec<Vec<Event>> = Vec::with_capacity(reads.len());
        let n = spill.partitions();
        let mut blockers: Vec<Vec<Blockers>> = (0..n).map(|_| Vec::new()).collect();
        for (i, mut fr) in reads.into_iter().enumerate() {
            if fr.summary.format.is_empty() {
                fr.summary.format = Format::Runlog.name().to_string();
            }
            imported.push(!matches!(fr.format, Format::Runlog | Format::Auto));
            summaries.push(fr.summary);
            rejects.extend(fr.rejects);
            held.push(fr.events);
            for (p, list) in fr.blockers.into_iter().enumerate().filter(|(p, _)| *p < n) {
                let file = i as u32;
                blockers[p].push(Blockers { file, list });
            }
        }
        if opts.keep.is_some() && imported.iter().any(|&i| i) {
            return Ok(None);
        }
        // Each partition's blockers, dropped once it is settled.
        let blockers: Vec<Mutex<Vec<Blockers>>> = blockers.into_iter().map(Mutex::new).collect();
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
            let mut agents = ingest::assemble_events(parts, &names, &imported, &mut a);
            lock(&acc).merge(a);
            if let Some(kinds) = opts.keep {
                let mine = std::mem::take(&mut *lock(&blockers[k]));
                let mut ing = Ingested {
                    agents,
                    files: summaries.clone(),
                    ..Default::default()
                };
                // With no imported file among the inputs this always settles.
                keep::settle(&mut ing, &mine, files, opts, kinds);
                agents = ing.agents;
            }
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
        Ok(Some(totals))
    })()
}
