//! Ingest: find the log files, read them as streams (plain, gzip or zstd), validate each
//! line's envelope (EVENTS.md) and turn it into an [`Event`] or a [`Reject`], then group
//! the events by agent (`root`), order them by `seq` and drop duplicates (SEMANTICS.md §1, §7).
//!
//! Nothing is lost: every non-blank line read ends up kept, a duplicate, or a reject.

mod assemble;
mod discover;
mod imported;
mod read;
pub mod spill;

pub use assemble::*;
pub use discover::*;
pub use imported::*;
pub use read::*;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use rayon::prelude::*;

pub use crate::decode::{excerpt, mask_secrets, parse_line, parse_ts, EXCERPT_BYTES, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::import::Format;
/// Default longest line accepted (SEMANTICS.md §7).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How ingest reads its input.
#[derive(Clone)]
pub struct IngestOptions {
    pub max_line_bytes: usize,
    /// The format of the input files; `Auto` detects each file's from its first records.
    pub format: Format,
    /// Called with the number of compressed bytes read so far, from any thread.
    pub progress: Option<std::sync::Arc<dyn Fn(u64) + Send + Sync>>,
    /// Where canonical events go instead of memory (see [`spill`]): each reader encodes
    /// its lines' events into spill records and writes them to the partitions in batches
    /// ([`spill::SpillBatch`]). Imported files are kept in memory (their roots are resolved
    /// across files first).
    pub spill: Option<std::sync::Arc<spill::Spill>>,
    /// The largest piece plain canonical files are read in, in parallel (a piece starts at
    /// a line; pieces are smaller when the inputs are, so that every thread has several);
    /// 0 reads every file whole.
    pub split_bytes: u64,
}

/// Default [`IngestOptions::split_bytes`]: pieces small enough that two cores finish
/// together (one 52 MB file more or less left one core idle for 0.1 s), large enough that
/// an agent of a log written agent by agent rarely spans two.
pub const DEFAULT_SPLIT_BYTES: u64 = 16 << 20;

/// Events a reader encodes before it writes them to [`IngestOptions::spill`].
pub const SPILL_BATCH: usize = 8192;

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            format: Format::Auto,
            progress: None,
            spill: None,
            split_bytes: DEFAULT_SPLIT_BYTES,
        }
    }
}

impl std::fmt::Debug for IngestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestOptions")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("format", &self.format)
            .field("progress", &self.progress.is_some())
            .field("split_bytes", &self.split_bytes)
            .finish()
    }
}

/// A line that could not be kept: where it is, why, and its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    pub file: String,
    pub line: u64,
    pub reason: String,
    pub excerpt: String,
}

/// The accounting of one input file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileSummary {
    pub file: String,
    /// The file's format (`runlog`, or the source an importer read).
    pub format: String,
    pub bytes: u64,
    /// Non-blank lines read.
    pub lines: u64,
    pub blank: u64,
    pub kept: u64,
    pub duplicates: u64,
    pub rejects: u64,
    /// Canonical events kept from the file (equal to `kept` for the canonical format; an
    /// imported line may yield several events, or none when it is folded into another).
    pub events: u64,
}

impl FileSummary {
    /// Adds another summary's counts (bytes, lines, ...) to these.
    pub fn add_counts(&mut self, other: &FileSummary) {
        self.bytes += other.bytes;
        self.lines += other.lines;
        self.blank += other.blank;
        self.kept += other.kept;
        self.duplicates += other.duplicates;
        self.rejects += other.rejects;
        self.events += other.events;
    }
}

/// All events of one agent (one `root`), in `seq` order, duplicates removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub root: String,
    pub events: Vec<Event>,
}

/// What ingest produced: agents in `root` order, rejects in (file, line) order.
#[derive(Debug, Default)]
pub struct Ingested {
    pub files: Vec<FileSummary>,
    /// Files inside folders skipped because of their name.
    pub skipped_files: Vec<String>,
    pub agents: Vec<Agent>,
    pub rejects: Vec<Reject>,
}

impl Ingested {
    pub fn totals(&self) -> FileSummary {
        let mut t = FileSummary {
            file: "(all)".into(),
            ..Default::default()
        };
        for f in &self.files {
            t.add_counts(f);
        }
        t
    }

    /// Names of the input files, indexed by `Event::file`.
    pub fn file_names(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.file.as_str()).collect()
    }
}

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
            let mut f = File::open(&input.path).map_err(|e| Error::io(name, e))?;
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
            .map(|r| (piece.file, r))
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
    for (file, mut r) in read {
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
            let mut f = File::open(&input.path).map_err(|e| Error::io(name, e))?;
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
            if shift > 0 {
                r.shift_lines(shift);
            }
            Ok(r)
        })
        .collect()
}
