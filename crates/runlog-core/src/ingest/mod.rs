//! Ingest: find the log files, read them as streams (plain, gzip or zstd), validate each
//! line's envelope (docs/events.md) and turn it into an [`Event`](crate::event::Event) or a
//! [`Reject`], then group the events by agent (`root`), order them by `seq` and drop
//! duplicates (docs/semantics.md §1, §7).
//!
//! Nothing is lost: every non-blank line read ends up kept, a duplicate, or a reject.
//!
//! This file drives the steps (discover, read in parallel, assemble); the types they share
//! and hand to callers are in `types`, each step in its own file. Each file uses only those
//! before it: `ids` (shared ids) → [`partitions`] (the spill's files) → `types` →
//! `discover` → `read` → `imported` → `assemble` → [`keep`] (reading some types only) →
//! [`spill`] (the spilled ingest) → this one.

mod assemble;
mod database;
mod discover;
mod ids;
mod imported;
pub mod keep;
pub mod partitions;
mod read;
pub mod spill;
mod types;

pub use assemble::*;
pub use discover::*;
pub use ids::*;
pub use imported::*;
pub use read::*;
pub use types::*;

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use rayon::prelude::*;

pub use crate::decode::{excerpt, mask_secrets, parse_line, parse_ts, EXCERPT_BYTES, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::import::Format;

/// Ingests files and folders: discover, read in parallel, group, order, deduplicate.
pub fn ingest_paths(paths: &[PathBuf], opts: &IngestOptions) -> Result<Ingested> {
    ingest_inputs(&Inputs::discover(paths)?, opts)
}

/// Reads the given inputs (in the order that decides conflicts), each shown by its name,
/// and assembles agents.
pub fn ingest_inputs(inputs: &Inputs, opts: &IngestOptions) -> Result<Ingested> {
    let mut ing = read_inputs(&inputs.files, opts)?;
    ing.skipped_files = inputs.skipped.clone();
    Ok(ing)
}

/// Reads the given files (already in the order that decides conflicts) and assembles agents.
pub fn ingest_files(files: &[PathBuf], opts: &IngestOptions) -> Result<Ingested> {
    read_inputs(&Inputs::of_files(files).files, opts)
}

fn read_inputs(files: &[Input], opts: &IngestOptions) -> Result<Ingested> {
    let pieces = split_files(files, opts)?;
    let mut read: Vec<(usize, FileRead)> = pieces
        .par_iter()
        .map(|piece| {
            let input = &files[piece.file];
            let name = &input.name;
            let mut f = database::open(input, opts.format)?;
            let row_rejects = f.take_rejects();
            let at_file_start = piece.start == 0;
            // A later piece is of a file that reads as canonical (see `split_files`).
            let canonical;
            let opts = if at_file_start {
                opts
            } else {
                f.seek(SeekFrom::Start(piece.start))
                    .map_err(|e| Error::io(name, e))?;
                canonical = IngestOptions {
                    format: Format::Runlog,
                    ..opts.clone()
                };
                &canonical
            };
            let raw = f.take(piece.len.unwrap_or(u64::MAX));
            read_piece(
                piece.file as u32,
                name,
                &input.rel,
                raw,
                opts,
                at_file_start,
            )
            .map(|mut r| {
                database::add_rejects(&mut r, name, row_rejects);
                (piece.file, r)
            })
        })
        .collect::<Result<_>>()?;
    // Line numbers of later pieces count from their piece's start: shift them by the lines
    // of the pieces before (in parallel: it touches every event of those pieces).
    let mut shifts = Vec::with_capacity(read.len());
    let mut before = 0u64;
    for (k, (file, r)) in read.iter().enumerate() {
        if k == 0 || read[k - 1].0 != *file {
            before = 0;
        }
        shifts.push(before);
        before += r.line_count;
    }
    read.par_iter_mut()
        .zip(&shifts)
        .filter(|(_, &shift)| shift > 0)
        .for_each(|((_, r), &shift)| r.shift_lines(shift));
    let mut parsed: Vec<FileRead> = Vec::with_capacity(files.len());
    let mut last_file = None;
    // Each piece's blockers stay in their own list (appending them copied them once more).
    let mut blockers: Vec<keep::Blockers> = Vec::new();
    for (file, mut r) in read {
        for list in std::mem::take(&mut r.blockers) {
            blockers.push(keep::Blockers {
                file: file as u32,
                list,
            });
        }
        match parsed.last_mut() {
            Some(whole) if last_file == Some(file) => {
                whole.summary.add_counts(&r.summary);
                whole.events.append(&mut r.events);
                whole.grouped.append(&mut r.grouped);
                whole.rejects.append(&mut r.rejects);
                whole.line_count += r.line_count;
            }
            _ => parsed.push(r),
        }
        last_file = Some(file);
    }
    let mut ing = assemble(parsed);
    excerpt_conflicts(files, &mut ing, opts);
    if let Some(kinds) = opts.keep.filter(|_| opts.spill.is_none()) {
        if !keep::settle(&mut ing, &blockers, files, opts, kinds) {
            let whole = IngestOptions {
                keep: None,
                ..opts.clone()
            };
            return read_inputs(files, &whole);
        }
    }
    Ok(ing)
}

/// Where [`read_files`] starts a file: at byte `from` (the start of a line of a plain
/// canonical file), numbering its lines after `lines`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    pub from: u64,
    pub lines: u64,
}

/// Reads files into their events and rejects without assembling them (`runlog ingest
/// --append` assembles them with the events a warehouse holds): each whole, or from where
/// `resume` says (read as canonical, line numbers shifted), each shown by its name.
/// `indices` are the files' `Event::file` numbers.
pub fn read_files(
    files: &[Input],
    indices: &[u32],
    resume: &[Option<Resume>],
    opts: &IngestOptions,
) -> Result<Vec<FileRead>> {
    files
        .par_iter()
        .enumerate()
        .map(|(k, input)| {
            let name = &input.name;
            let mut f = database::open(input, opts.format)?;
            let row_rejects = f.take_rejects();
            let canonical;
            let (opts, at_start, shift) = match resume[k] {
                None => (opts, true, 0),
                Some(r) => {
                    f.seek(SeekFrom::Start(r.from))
                        .map_err(|e| Error::io(name, e))?;
                    canonical = IngestOptions {
                        format: Format::Runlog,
                        ..opts.clone()
                    };
                    (&canonical, false, r.lines)
                }
            };
            let mut r = read_piece(indices[k], name, &input.rel, f, opts, at_start)?;
            database::add_rejects(&mut r, name, row_rejects);
            if shift > 0 {
                r.shift_lines(shift);
            }
            Ok(r)
        })
        .collect()
}
