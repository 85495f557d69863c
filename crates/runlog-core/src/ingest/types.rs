//! The types ingest shares between its steps and hands to its callers: how it reads
//! ([`IngestOptions`]), what it rejects ([`Reject`]), what it read of each file
//! ([`FileSummary`]), and what it produced ([`Agent`]s in [`Ingested`]).

use super::partitions::Spill;
use crate::event::Event;
use crate::import::Format;
use crate::shard::{fnv1a64, Shard};

/// Default longest line accepted (docs/semantics.md §7).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How ingest reads its input.
#[derive(Clone)]
pub struct IngestOptions {
    pub max_line_bytes: usize,
    /// The format of the input files; `Auto` detects each file's from its first records.
    pub format: Format,
    /// Called with the number of compressed bytes read so far, from any thread.
    pub progress: Option<std::sync::Arc<dyn Fn(u64) + Send + Sync>>,
    /// Where canonical events go instead of memory (see [`super::spill`]): each reader encodes
    /// its lines' events into spill records and writes them to the partitions in batches
    /// ([`super::partitions::SpillBatch`]). Imported files are kept in memory (their roots are resolved
    /// across files first).
    pub spill: Option<std::sync::Arc<Spill>>,
    /// The largest piece plain canonical files are read in, in parallel (a piece starts at
    /// a line; pieces are smaller when the inputs are, so that every thread has several);
    /// 0 reads every file whole.
    pub split_bytes: u64,
    /// The kinds of events to keep (`None`: every event). A question whose tables depend
    /// on a few types only (`reduce::needs`) reads every other line no further than its
    /// `seq`, `root` and `type`, and keeps of it only what settles conflicts
    /// ([`super::keep`]). Ignored when spilling. The tables that depend on other events
    /// (`events`, `rejects`, `files`, `agents`, ...) are then not to be built.
    pub keep: Option<crate::event::KindSet>,
    /// Only this agent's events (`None`: every agent's), for a replay: a canonical line
    /// of another root is read no further than its `root` and dropped (duplicates and
    /// conflicts are settled per root, so it settles nothing for this one). Imported files
    /// are decoded whole (their roots are resolved across files). The tables that depend on
    /// every line (`rejects`, `files`, `agents`, ...) are then not to be built.
    pub root: Option<std::sync::Arc<str>>,
}

/// Default [`IngestOptions::split_bytes`]: pieces small enough that two cores finish
/// together (one 52 MB file more or less left one core idle for 0.1 s), large enough that
/// an agent of a log written agent by agent rarely spans two.
pub const DEFAULT_SPLIT_BYTES: u64 = 16 << 20;

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            format: Format::Auto,
            progress: None,
            spill: None,
            split_bytes: DEFAULT_SPLIT_BYTES,
            keep: None,
            root: None,
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
            .field("keep", &self.keep)
            .field("root", &self.root)
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

    /// Keeps only the agents of `shard` (after assembly, before reduce).
    pub fn retain_shard(&mut self, shard: &Shard) {
        self.agents.retain(|a| shard.owns(&a.root));
    }

    /// A fingerprint of the inputs: FNV-1a over each file's name and size, in order.
    pub fn inputs_fingerprint(&self) -> String {
        let mut text = String::new();
        for f in &self.files {
            text.push_str(&f.file);
            text.push('\0');
            text.push_str(&f.bytes.to_string());
            text.push('\n');
        }
        format!(
            "{} files, fnv1a64 {:016x}",
            self.files.len(),
            fnv1a64(text.as_bytes())
        )
    }
}
