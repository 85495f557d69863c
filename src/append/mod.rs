//! `runlog ingest --append`: a warehouse that grows with its logs. Only what is new is
//! read, only the buckets of the agents it touches are written again, and the result is
//! the warehouse a single full ingest of all the inputs would write, row for row
//! (docs/warehouse.md tells the whole design).
//!
//! - **What is new** comes from the fingerprint index in the manifest
//!   ([`runlog_core::fingerprint`]): a file with the same bytes is skipped, a plain
//!   canonical file that only grew has its new lines read (numbered on), any other change
//!   re-reads the file whole and retracts its old rows.
//! - **Buckets.** The per-agent tables are stored in [`BUCKETS`] hash-of-root buckets
//!   (`root_hash(root) % B`, the hash of `--shard`). For each bucket the new events touch,
//!   the bucket's kept events are read back from its `events` files and assembled with the
//!   new lines' events by the full ingest's own assembly (first in (file path, line) order
//!   wins), then the touched agents are reduced again. New events go into a new
//!   `events` file of the bucket (its files are compacted into one past
//!   [`MAX_EVENTS_FILES`]). Each derived table of a bucket is a list of files too: those
//!   holding touched agents' rows (found by their `root` column) are written again
//!   without them, the touched agents' rows go into a new file, the others stay (past
//!   [`MAX_DERIVED_FILES`] the smallest are merged: `derived_files`). The shared tables
//!   (`files`, `rejects`) are rewritten whole: the old rows plus what this run read and
//!   what assembly found. One bucket is in memory at a time, with the new inputs.
//! - **When the warehouse cannot tell exactly** what a full ingest would do, the append
//!   reads every input again (the files of the index, by name, and the new ones) and
//!   rewrites every bucket, saying why. The warehouse keeps kept events only, not the
//!   duplicates and conflicting lines that lost to them; so this happens when a new line
//!   would win over a kept event with other content (with the same content the losers
//!   lose to it alike), or a file changed, while the warehouse holds such losers;
//!   when an agent touched has events of an imported format (their roots and numbers
//!   depend on all their files); when a new file is of an imported format; and for a
//!   warehouse not stored in buckets yet (a full ingest, shards, or older releases).
//! - **Inputs** are local files and objects in stores ([`crate::inputs`]), known by their
//!   names (a path, an object's URL). An object whose listing (size and e_tag) is the one
//!   its fingerprint recorded is unchanged without being downloaded; the others are
//!   downloaded (once per append, however many times it plans again) and compared as files
//!   are. When every input is read again, those of the index named by a URL are downloaded
//!   from it.
//! - **Commits** go through the version log ([`crate::commit::log`]). An append plans on
//!   the version it read; when another writer committed first, it plans again on the new
//!   version (up to [`MAX_ATTEMPTS`] times, then it refuses).
//! - **Shards** (`--append --shard I/N`, N dividing [`BUCKETS`]): N runs over the same
//!   inputs share one append, an *append round* in the manifest
//!   ([`crate::commit::AppendRound`]). Each plans on the round's base version, writes the
//!   buckets `b % N == I`, and merges them into the latest version at its commit; shard 0
//!   also assembles every touched bucket (not reducing or writing the others') for the
//!   shared tables and the new index, which the version takes when the last shard lands.
//!   An open round refuses other appends.
//!
//! The code: this file plans an attempt (what is new, which part of a round, which
//! plan); `incremental` reads the new lines and adds up the buckets, each appended by
//! `bucket` (its derived tables' files kept or written by `derived`); `full` reads
//! everything again; `land` writes the shared tables and commits. Reading the committed
//! Parquet files back is [`crate::store::read`]'s.

mod agents;
mod bucket;
mod derived;
mod full;
mod incremental;
mod land;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

pub use agents::{latest, replace_agents, Replaced, Replacement};
pub use derived::RowCounts;
use std::time::Instant;

use rayon::prelude::*;

use crate::commit::{log, GcPolicy, Manifest};
use crate::error::{Error, Result};
use crate::inputs::{self, Downloads, Source, Sources, StoreObject};
use crate::objstore::{block_on, Root};
use crate::store::TABLES;
use runlog_core::fingerprint::{scan, Change, Fingerprint, ObjectStamp, Scan};
use runlog_core::ingest::{self, IngestOptions, Ingested};
use runlog_core::shard::{root_hash, Shard, SHARED_TABLES};
use runlog_core::table::Table;
use runlog_core::Summary;

/// B: how many hash-of-root buckets an appended warehouse stores its per-agent tables in.
/// A power of two, so that every `--shard` count that is one divides it.
pub const BUCKETS: u32 = 64;
/// A bucket's `events` files are compacted into one when an append would make more.
pub const MAX_EVENTS_FILES: usize = 8;
/// Files a bucket keeps of each derived table: past it, an append merges the smallest.
pub const MAX_DERIVED_FILES: usize = 8;
/// How many times an append plans again on a version another writer committed first.
pub const MAX_ATTEMPTS: usize = 32;

/// What an append did.
#[derive(Debug, Default)]
pub struct Appended {
    /// The warehouse's accounting after the append (`None`: nothing was new).
    pub summary: Option<Summary>,
    /// Input files not read before.
    pub new_files: u64,
    /// Lines this run read (blank ones included).
    pub new_lines: u64,
    pub grown_files: u64,
    pub changed_files: u64,
    pub unchanged_files: u64,
    /// Why every input was read again and every bucket rewritten, when it was.
    pub full_rewrite: Option<String>,
    /// Buckets whose files were written.
    pub buckets_written: usize,
    /// Bytes of the files this append wrote.
    pub bytes_written: u64,
    /// The version committed (`None`: nothing was new, nothing committed).
    pub manifest: Option<Manifest>,
    /// Times it planned again after another writer committed first.
    pub replanned: usize,
    /// Objects downloaded from stores (each once), and their bytes.
    pub downloaded_files: u64,
    pub downloaded_bytes: u64,
    /// Objects known unchanged by their listing, not downloaded.
    pub listed_unchanged: u64,
    /// With `--shard`, or when it completed an open round: the round after this run.
    pub round: Option<RoundStatus>,
}

/// Where an append round (`--append --shard I/N`) stands after one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundStatus {
    /// N.
    pub count: u32,
    /// The shards this run did.
    pub ran: Vec<u32>,
    /// The shards landed, this run's included.
    pub landed: Vec<u32>,
    /// Whether this run's shards had landed already (nothing was done).
    pub already: bool,
}

impl RoundStatus {
    /// Shards not landed yet.
    pub fn missing(&self) -> Vec<u32> {
        (0..self.count)
            .filter(|i| !self.landed.contains(i))
            .collect()
    }

    /// Lines for the ingest summary.
    pub fn render(&self) -> String {
        let missing = self.missing();
        let ran = list(&self.ran);
        let mut s = if self.already {
            format!(
                "  shard(s) {ran} of {} had landed in this round already: nothing to do\n",
                self.count
            )
        } else {
            format!("  append round: shard(s) {ran} of {} landed\n", self.count)
        };
        s.push_str(&format!(
            "  shard_status: {} of {} shards landed{}\n",
            self.landed.len(),
            self.count,
            if missing.is_empty() {
                " (complete: the fingerprint index took the round's inputs)".to_string()
            } else {
                format!(
                    " (missing {}: the tables are partial until they land)",
                    list(&missing)
                )
            }
        ));
        s
    }
}

fn list(v: &[u32]) -> String {
    v.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Appends the listed `sources` ([`inputs::list`]) to the warehouse at `root` (created
/// when missing); with `shard`, as that shard of an append round. Objects are downloaded to
/// a temporary folder, removed when the append ends (or fails), and reported to `progress`
/// as they go. The pipeline's [`crate::pipeline::run`] is the way in.
pub fn append(
    root: &Root,
    sources: &Sources,
    opts: &IngestOptions,
    gc: GcPolicy,
    shard: Option<Shard>,
    progress: Option<inputs::DownloadProgress>,
) -> Result<Appended> {
    if let Some(s) = shard.filter(|s| BUCKETS % s.count != 0) {
        return Err(Error::Invalid(format!(
            "--append --shard {s}: N must divide the warehouse's {BUCKETS} buckets (1, 2, 4, \
             8, 16, 32 or 64), so that each bucket belongs to one shard; nothing was written"
        )));
    }
    let start = Instant::now();
    let downloads = Downloads::with_progress(progress);
    let run = Run {
        root,
        sources: &sources.files,
        downloads: &downloads,
        skipped: sources.skipped.len() as u64,
        skipped_json: runlog_core::ingest::count_json(&sources.skipped),
        opts,
        gc,
        start,
        shard: shard.filter(|s| s.count > 1),
    };
    for replanned in 0..MAX_ATTEMPTS {
        let current = block_on(log::latest(root))?;
        if let Some(mut a) = run.attempt(current)? {
            a.replanned = replanned;
            (a.downloaded_files, a.downloaded_bytes) = downloads.counts();
            return Ok(a);
        }
    }
    Err(root.error(format!(
        "{MAX_ATTEMPTS} other commits landed while this append was planning; nothing was \
         committed: run it again"
    )))
}

/// One input file of this run.
struct Input {
    /// Its local copy (`None`: an object known unchanged by its listing, not downloaded).
    path: Option<PathBuf>,
    name: String,
    rel: String,
    change: Change,
    scan: Scan,
    /// An object's stamp: of the bytes downloaded, or as listed when not downloaded.
    object: Option<ObjectStamp>,
}

impl Input {
    /// The file as the core reads it: its local copy, shown by its name.
    fn local(&self) -> Result<ingest::Input> {
        let path = self.path.clone().ok_or_else(|| {
            Error::Invalid(format!("{}: known unchanged, not downloaded", self.name))
        })?;
        Ok(ingest::Input {
            path,
            name: self.name.clone(),
            rel: self.rel.clone(),
        })
    }
}

/// One append's inputs and settings.
struct Run<'a> {
    root: &'a Root,
    /// This run's inputs, in name order.
    sources: &'a [Source],
    /// Local copies of the objects, made once per append.
    downloads: &'a Downloads,
    skipped: u64,
    /// Of those, the `.json` files.
    skipped_json: u64,
    opts: &'a IngestOptions,
    gc: GcPolicy,
    start: Instant,
    /// `--shard I/N` (N > 1).
    shard: Option<Shard>,
}

/// The shards `indices` of `count` that one run of an append does: the buckets
/// `b % count` in `indices`, and with shard 0 the shared tables and the new index. An
/// append without `--shard` is 0 of 1, or the missing shards of a round open for its
/// inputs.
#[derive(Debug, Clone)]
struct Part {
    count: u32,
    indices: BTreeSet<u32>,
}

impl Part {
    fn owns(&self, b: u32) -> bool {
        self.indices.contains(&(b % self.count))
    }

    fn shared(&self) -> bool {
        self.indices.contains(&0)
    }
}

/// What one attempt plans on: the part it does, the version its plan reads (`base`: the
/// open round's, else the latest) and a fingerprint of its inputs.
struct Target {
    part: Part,
    base: Option<u64>,
    key: String,
}

/// What an attempt wrote, merged into the latest version at its commit.
struct Work {
    /// The shared tables' rows (shard 0 only).
    shared: Option<Ingested>,
    /// The fingerprint index after the append (shard 0 only).
    index: Option<BTreeMap<String, Fingerprint>>,
    /// The buckets whose files it replaces (those it does).
    scope: BTreeSet<u32>,
    /// Per-agent table -> bucket of `scope` -> its files (missing: no rows).
    bucket_files: BTreeMap<String, BTreeMap<u32, Vec<String>>>,
    /// Bucket of `scope` -> [agents, intervals] (missing: no agents).
    bucket_counts: BTreeMap<u32, [u64; 2]>,
    buckets: u32,
}

/// A fingerprint of an append's inputs: names and content, in order.
fn inputs_key(inputs: &[Input]) -> String {
    let mut text = String::new();
    for i in inputs {
        let s = &i.scan;
        text.push_str(&format!(
            "{}\0{} {} {:016x} {:016x}\n",
            i.name, s.size, s.complete, s.hash, s.tail_hash
        ));
    }
    format!("{} files, fnv1a64 {:016x}", inputs.len(), root_hash(&text))
}

/// Why an incremental plan gave way to reading everything again.
enum Plan {
    Done(Box<Appended>),
    Stale,
    Full(String),
}

fn bucket_of(root: &str, b: u32) -> u32 {
    (root_hash(root) % u64::from(b.max(1))) as u32
}

/// The tables written per agent.
fn per_agent_tables() -> Vec<Table> {
    TABLES
        .iter()
        .copied()
        .filter(|t| !SHARED_TABLES.contains(t))
        .collect()
}

impl Run<'_> {
    /// One try on the latest version `latest`: `None` when another writer committed first.
    fn attempt(&self, latest: Option<(u64, Manifest)>) -> Result<Option<Appended>> {
        let (latest_n, current) = match latest {
            Some((n, m)) => (Some(n), Some(m)),
            None => (None, None),
        };
        // The shards of an open round all plan on its base version, whatever landed since.
        let (base, old) = match current.as_ref().and_then(|m| m.round.as_ref()) {
            Some(r) => (
                r.base,
                match r.base {
                    Some(n) => Some(block_on(log::read_version(self.root, n))?),
                    None => None,
                },
            ),
            None => (latest_n, current.clone()),
        };
        let empty = BTreeMap::new();
        let index = old.as_ref().map_or(&empty, |m| &m.inputs);
        // Objects unchanged by their listing are not downloaded; the others are, at once.
        let listed_unchanged = |o: &StoreObject| {
            index
                .get(&o.name)
                .is_some_and(|fp| fp.unchanged_by_listing(&o.stamp))
        };
        let fetch: Vec<&StoreObject> = self
            .sources
            .iter()
            .filter_map(|s| match s {
                Source::Object(o) if !listed_unchanged(o) => Some(o),
                _ => None,
            })
            .collect();
        self.downloads.fetch(&fetch)?;
        let inputs: Vec<Input> = self
            .sources
            .par_iter()
            .map(|src| {
                let name = src.name().to_string();
                let (path, object) = match src {
                    Source::Local(i) => (Some(i.path.clone()), None),
                    Source::Object(o) => (
                        self.downloads.local(&o.name).map(|i| i.path),
                        Some(self.downloads.stamp(&o.name).unwrap_or(o.stamp.clone())),
                    ),
                };
                let (change, scan) = match (&path, index.get(&name)) {
                    (Some(p), Some(fp)) => fp.compare(p).map_err(|e| Error::io(&name, e))?,
                    (Some(p), None) => {
                        (Change::New, scan(p, None).map_err(|e| Error::io(&name, e))?)
                    }
                    (None, Some(fp)) => (Change::Unchanged, fp.scan()),
                    (None, None) => {
                        return Err(Error::Invalid(format!("{name}: not downloaded")));
                    }
                };
                Ok(Input {
                    path,
                    name,
                    rel: src.rel().to_string(),
                    change,
                    scan,
                    object,
                })
            })
            .collect::<Result<_>>()?;
        let count = |f: fn(&Change) -> bool| inputs.iter().filter(|i| f(&i.change)).count() as u64;
        let mut a = Appended {
            summary: None,
            new_files: count(|c| *c == Change::New),
            new_lines: 0,
            grown_files: count(|c| matches!(c, Change::Grown { .. })),
            changed_files: count(|c| *c == Change::Changed),
            unchanged_files: count(|c| *c == Change::Unchanged),
            full_rewrite: None,
            buckets_written: 0,
            bytes_written: 0,
            manifest: None,
            replanned: 0,
            listed_unchanged: inputs.iter().filter(|i| i.path.is_none()).count() as u64,
            ..Default::default()
        };
        if old.is_some() && inputs.iter().all(|i| i.change == Change::Unchanged) {
            return Ok(Some(a));
        }
        let key = inputs_key(&inputs);
        let part = match self.part(current.as_ref(), &key)? {
            Ok(p) => p,
            Err(status) => {
                (a.new_files, a.grown_files, a.changed_files) = (0, 0, 0);
                a.round = Some(status);
                return Ok(Some(a));
            }
        };
        let t = Target { part, base, key };
        let plan = match &old {
            None => Plan::Full(String::new()),
            Some(m) if m.shards.is_some() => {
                Plan::Full("the warehouse was written by shards (--shard)".into())
            }
            Some(m) if m.buckets == 0 => Plan::Full(
                "the warehouse was not stored in buckets yet (written by a full ingest, or by \
                 an older release)"
                    .into(),
            ),
            Some(m) => self.incremental(m, &inputs, &mut a, &t)?,
        };
        match plan {
            Plan::Done(done) => Ok(Some(*done)),
            Plan::Stale => Ok(None),
            Plan::Full(why) => {
                if !why.is_empty() {
                    a.full_rewrite = Some(why);
                }
                self.full(old.as_ref(), &inputs, a, &t)
            }
        }
    }

    /// The part of the append this run does, given the round open in `current` (if any)
    /// and this run's inputs (`key`); `Err`: this run's shard had landed already.
    fn part(
        &self,
        current: Option<&Manifest>,
        key: &str,
    ) -> Result<std::result::Result<Part, RoundStatus>> {
        let one = |count: u32, i: u32| Part {
            count,
            indices: BTreeSet::from([i]),
        };
        let Some(r) = current.and_then(|m| m.round.as_ref()) else {
            return Ok(Ok(match self.shard {
                Some(s) => one(s.count, s.index),
                None => one(1, 0),
            }));
        };
        let missing = r.missing();
        let state = format!(
            "an append round of {n} shards is open in the warehouse ({k} of {n} shards landed; \
             missing {m})",
            n = r.count,
            k = r.landed.len(),
            m = list(&missing)
        );
        let refuse = |why: String| {
            Err(self.root.error(format!(
                "{state}; {why}. Run the missing shards with the inputs of the round (\
                 `runlog ingest --append PATHS --shard I/{n}`, or once without --shard to \
                 do them all here), then this append; nothing was written",
                n = r.count
            )))
        };
        if r.inputs != key {
            return refuse(format!(
                "this run's inputs are not the round's ({key}, the round's: {})",
                r.inputs
            ));
        }
        match self.shard {
            None => Ok(Ok(Part {
                count: r.count,
                indices: missing.into_iter().collect(),
            })),
            Some(s) if s.count != r.count => refuse(format!("shard {s} is of another round")),
            Some(s) if r.landed.contains(&s.index) => Ok(Err(RoundStatus {
                count: r.count,
                ran: vec![s.index],
                landed: r.landed.iter().copied().collect(),
                already: true,
            })),
            Some(s) => Ok(Ok(one(s.count, s.index))),
        }
    }
}
