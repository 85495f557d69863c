//! `runlog ingest --append`: a warehouse that grows with its logs. Only what is new is
//! read, only the buckets of the agents it touches are written again, and the result is
//! the warehouse a single full ingest of all the inputs would write, row for row
//! (docs/append-design.md tells the whole design).
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
//!   inputs share one append, an *append round* in the manifest ([`AppendRound`]). Each
//!   plans on the round's base version, writes the buckets `b % N == I`, and merges them
//!   into the latest version at its commit; shard 0 also assembles every touched bucket
//!   (not reducing or writing the others') for the shared tables and the new index, which
//!   the version takes when the last shard lands. An open round refuses other appends.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::arrow::array::{AsArray, RecordBatch};
use rayon::prelude::*;

use crate::commit::{self, log, AppendRound, GcPolicy, Manifest, Staged, MANIFEST_FORMAT};
use crate::error::{Error, Result};
use crate::ingest::{self, FileRead, FileSummary, IngestOptions, Ingested, Reject, Resume};
use crate::inputs::{self, Downloads, Source, Sources, StoreObject};
use crate::objstore::{self, block_on, Root};
use crate::reduce::Derived;
use crate::store::{self, TABLES};
use runlog_core::fingerprint::{scan, Change, Fingerprint, ObjectStamp, Scan};
use runlog_core::import::Format;
use runlog_core::shard::{root_hash, Shard, SHARED_TABLES};
use runlog_core::{reduce_all, Event, Summary};

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

/// Appends the inputs at `locations` (local files and folders, objects and prefixes in
/// stores) to the warehouse at `warehouse` (created when missing).
pub fn append(
    locations: &[PathBuf],
    opts: &IngestOptions,
    warehouse: &Path,
    gc: GcPolicy,
) -> Result<Appended> {
    append_at(&Root::open(warehouse)?, locations, opts, gc)
}

/// [`append`] into a warehouse already opened (any store).
pub fn append_at(
    root: &Root,
    locations: &[PathBuf],
    opts: &IngestOptions,
    gc: GcPolicy,
) -> Result<Appended> {
    append_shard_at(root, locations, opts, gc, None)
}

/// [`append_at`] as shard `shard` of an append round (`ingest --append --shard I/N`;
/// `None`: the whole append, or the missing shards of a round open for the same inputs).
pub fn append_shard_at(
    root: &Root,
    locations: &[PathBuf],
    opts: &IngestOptions,
    gc: GcPolicy,
    shard: Option<Shard>,
) -> Result<Appended> {
    append_sources(root, &inputs::list(locations)?, opts, gc, shard)
}

/// [`append_shard_at`] of inputs already listed ([`inputs::list`]). Objects are
/// downloaded to a temporary folder, removed when the append ends (or fails).
pub fn append_sources(
    root: &Root,
    sources: &Sources,
    opts: &IngestOptions,
    gc: GcPolicy,
    shard: Option<Shard>,
) -> Result<Appended> {
    append_sources_with(root, sources, opts, gc, shard, None)
}

/// [`append_sources`], reporting the downloads of objects to `progress` as they go.
pub fn append_sources_with(
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

/// The fingerprints of a full ingest's inputs (`files`: its accounting, by name), keyed by
/// the names the tables give them (an object's URL, read from its local copy).
/// `stamps`: what the store said of each object read, by URL.
pub fn fingerprints(
    inputs: &ingest::Inputs,
    files: &[FileSummary],
    stamps: &BTreeMap<String, ObjectStamp>,
) -> Result<BTreeMap<String, Fingerprint>> {
    let by_name: HashMap<&str, &FileSummary> = files.iter().map(|f| (f.file.as_str(), f)).collect();
    inputs
        .files
        .par_iter()
        .filter_map(|i| Some((i, *by_name.get(i.name.as_str())?)))
        .map(|(i, f)| {
            let s = scan(&i.path, None).map_err(|e| Error::io(&i.name, e))?;
            let mut fp = Fingerprint::new(&s, f.lines + f.blank, &f.format, &i.rel);
            fp.object = stamps.get(&i.name).cloned();
            Ok((i.name.clone(), fp))
        })
        .collect()
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
fn per_agent_tables() -> Vec<&'static str> {
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

    /// Reads every input (the index's and this run's) and writes every bucket: a full
    /// ingest stored in buckets.
    fn full(
        &self,
        old: Option<&Manifest>,
        inputs: &[Input],
        mut a: Appended,
        t: &Target,
    ) -> Result<Option<Appended>> {
        // Every file the warehouse holds, with this run's, by name: its relative name.
        let mut all: BTreeMap<String, String> = BTreeMap::new();
        if let Some(m) = old {
            if m.inputs.is_empty() {
                for f in read_files_table(self.root, m)? {
                    let rel = ingest::relative_name(Path::new(&f.file), &[]);
                    all.insert(f.file, rel);
                }
            } else {
                all.extend(m.inputs.iter().map(|(n, fp)| (n.clone(), fp.rel.clone())));
            }
        }
        for i in inputs {
            all.insert(i.name.clone(), i.rel.clone());
        }
        let wanted: Vec<(String, String)> = all.into_iter().collect();
        let mut files = Vec::with_capacity(wanted.len());
        for ((name, _), local) in wanted.iter().zip(self.local_copies(&wanted, inputs)?) {
            let Some(local) = local else {
                return Err(Error::Invalid(format!(
                    "--append has to read every input again ({}), and {name}, ingested \
                     before, is not there (the names are as the earlier ingest was given \
                     them: run it from the same folder). Nothing was written; run a full \
                     ingest of all the logs instead",
                    a.full_rewrite.as_deref().unwrap_or("a new warehouse")
                )));
            };
            files.push(local);
        }
        // `files` is ordered by name, which is the path order every ingest reads in.
        let local: HashMap<String, (PathBuf, String)> = files
            .iter()
            .map(|f| (f.name.clone(), (f.path.clone(), f.rel.clone())))
            .collect();
        let mut ing = ingest::ingest_inputs(
            &ingest::Inputs {
                files,
                skipped: Vec::new(),
            },
            self.opts,
        )?;
        a.new_lines = ing.files.iter().map(|f| f.lines + f.blank).sum();
        let staged = Staged::begin_at(self.root.clone(), commit::new_ingest_id())?;
        let dir = staged.dir().to_path_buf();
        let id = staged.id().to_string();
        let mut by_bucket: BTreeMap<u32, Vec<ingest::Agent>> = BTreeMap::new();
        for ag in std::mem::take(&mut ing.agents) {
            by_bucket
                .entry(bucket_of(&ag.root, BUCKETS))
                .or_default()
                .push(ag);
        }
        let mut bucket_files: BTreeMap<String, BTreeMap<u32, Vec<String>>> = BTreeMap::new();
        let mut bucket_counts = BTreeMap::new();
        let mut file_buckets: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); ing.files.len()];
        for (b, agents) in by_bucket {
            for ev in agents.iter().flat_map(|a| &a.events) {
                file_buckets[ev.file as usize].insert(b);
            }
            // Another shard's bucket: its agents are that shard's to reduce and write.
            if !t.part.owns(b) {
                continue;
            }
            let sub = Ingested {
                files: ing.files.clone(),
                agents,
                ..Default::default()
            };
            let derived = reduce_all(&sub);
            let written = write_bucket(&dir, &id, b, &sub, &derived)?;
            for (t, names) in written {
                bucket_files.entry(t).or_default().insert(b, names);
            }
            bucket_counts.insert(b, [sub.agents.len() as u64, derived.intervals.len() as u64]);
        }
        a.buckets_written = bucket_counts.len();
        let work = |shared, index| Work {
            shared,
            index,
            scope: (0..BUCKETS).filter(|&b| t.part.owns(b)).collect(),
            bucket_files,
            bucket_counts,
            buckets: BUCKETS,
        };
        if !t.part.shared() {
            return self.finish(staged, old, work(None, None), a, t);
        }
        let mut index = BTreeMap::new();
        for (k, f) in ing.files.iter().enumerate() {
            let (p, rel) = &local[&f.file];
            // Scanned again when first downloaded here: the bytes read.
            let s = match inputs.iter().find(|i| i.name == f.file) {
                Some(i) if i.path.is_some() => i.scan,
                _ => scan(p, None).map_err(|e| Error::io(&f.file, e))?,
            };
            let mut fp = Fingerprint::new(&s, f.lines + f.blank, &f.format, rel);
            fp.buckets = std::mem::take(&mut file_buckets[k]);
            fp.object = self.downloads.stamp(&f.file);
            index.insert(f.file.clone(), fp);
        }
        self.stamp(&mut index, inputs);
        let shared = Ingested {
            files: std::mem::take(&mut ing.files),
            rejects: std::mem::take(&mut ing.rejects),
            ..Default::default()
        };
        self.finish(staged, old, work(Some(shared), Some(index)), a, t)
    }

    /// Local copies of the inputs `wanted` (name, relative name), in their order: this
    /// run's; objects (of this run, or named by a URL in the index) downloaded now, one
    /// each; other names as local paths. `None`: no such file or object.
    fn local_copies(
        &self,
        wanted: &[(String, String)],
        inputs: &[Input],
    ) -> Result<Vec<Option<ingest::Input>>> {
        let this: HashMap<&str, &Input> = inputs.iter().map(|i| (i.name.as_str(), i)).collect();
        let urls: Vec<(&str, &str)> = wanted
            .iter()
            .filter(|(n, _)| this.get(n.as_str()).is_none_or(|i| i.path.is_none()))
            .filter(|(n, _)| objstore::is_supported_remote(Path::new(n)))
            .map(|(n, r)| {
                let rel = this.get(n.as_str()).map_or(r.as_str(), |i| i.rel.as_str());
                (n.as_str(), rel)
            })
            .collect();
        let mut fetched: HashMap<String, Option<ingest::Input>> = urls
            .iter()
            .map(|(n, _)| n.to_string())
            .zip(self.downloads.fetch_urls(&urls)?)
            .collect();
        wanted
            .iter()
            .map(|(name, rel)| {
                if let Some(got) = fetched.remove(name) {
                    return Ok(got);
                }
                match this.get(name.as_str()) {
                    Some(i) if i.path.is_some() => i.local().map(Some),
                    _ => Ok(Some(ingest::Input {
                        path: PathBuf::from(name),
                        name: name.clone(),
                        rel: rel.clone(),
                    })
                    .filter(|i| i.path.is_file())),
                }
            })
            .collect()
    }

    /// Gives the index's entries of this run's objects what the store said of them now
    /// (an object written again with the same bytes is then known by its new e_tag).
    fn stamp(&self, index: &mut BTreeMap<String, Fingerprint>, inputs: &[Input]) {
        for i in inputs {
            if let (Some(fp), Some(o)) = (index.get_mut(&i.name), &i.object) {
                fp.object = Some(self.downloads.stamp(&i.name).unwrap_or(o.clone()));
            }
        }
    }

    /// The incremental plan on a bucketed warehouse `m` (see the module documentation).
    fn incremental(
        &self,
        m: &Manifest,
        inputs: &[Input],
        a: &mut Appended,
        t: &Target,
    ) -> Result<Plan> {
        let b_count = m.buckets;
        let old_rows = read_files_table(self.root, m)?;
        let old_rejects = read_table(self.root, m, "rejects", store::rejects_from_batch)?;
        let to_read: Vec<&Input> = inputs
            .iter()
            .filter(|i| i.change != Change::Unchanged)
            .collect();
        let retracted: HashSet<&str> = to_read
            .iter()
            .filter(|i| i.change == Change::Changed)
            .map(|i| i.name.as_str())
            .collect();
        // Lines that lost to a kept event: the warehouse keeps their count, not their events.
        let losers: u64 = old_rows.iter().map(|f| f.duplicates).sum::<u64>()
            + old_rejects
                .iter()
                .filter(|r| r.reason.starts_with(ingest::CONFLICT_REASON))
                .count() as u64;
        if !retracted.is_empty() && losers > 0 {
            return Ok(Plan::Full(format!(
                "a file changed ({}) and the warehouse holds duplicate or conflicting lines, \
                 whose events it does not keep",
                retracted.iter().next().copied().unwrap_or_default()
            )));
        }
        // Every file name, in the order every ingest reads in.
        let mut names: BTreeSet<String> = old_rows.iter().map(|f| f.file.clone()).collect();
        names.extend(to_read.iter().map(|i| i.name.clone()));
        let names: Vec<String> = names.into_iter().collect();
        let idx: HashMap<&str, u32> = names
            .iter()
            .enumerate()
            .map(|(k, n)| (n.as_str(), k as u32))
            .collect();
        let resume: Vec<Option<Resume>> = to_read
            .iter()
            .map(|i| match i.change {
                Change::Grown { from, lines } => Some(Resume { from, lines }),
                _ => None,
            })
            .collect();
        let reads = ingest::read_files(
            &to_read
                .iter()
                .map(|i| i.local())
                .collect::<Result<Vec<_>>>()?,
            &to_read
                .iter()
                .map(|i| idx[i.name.as_str()])
                .collect::<Vec<_>>(),
            &resume,
            self.opts,
        )?;
        if let Some(r) = reads
            .iter()
            .find(|r| !matches!(r.format, Format::Runlog | Format::Auto))
        {
            return Ok(Plan::Full(format!(
                "{} is of an imported format ({}), whose roots and numbers depend on every file",
                r.summary.file,
                r.format.name()
            )));
        }
        // What this run read, per file; the new events by bucket.
        let n = names.len();
        let mut read_sum: Vec<Option<FileSummary>> = vec![None; n];
        let mut read_lines = vec![0u64; n];
        let mut new_rejects: Vec<Reject> = Vec::new();
        let mut new_by_bucket: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
        for (k, mut r) in reads.into_iter().enumerate() {
            let f = idx[to_read[k].name.as_str()] as usize;
            a.new_lines += r.line_count;
            read_lines[f] = r.line_count;
            new_rejects.append(&mut r.rejects);
            for ev in r
                .events
                .drain(..)
                .chain(r.grouped.drain(..).flat_map(|g| g.events))
            {
                new_by_bucket
                    .entry(bucket_of(&ev.root, b_count))
                    .or_default()
                    .push(ev);
            }
            read_sum[f] = Some(r.summary);
        }
        let old_row: HashMap<&str, &FileSummary> =
            old_rows.iter().map(|f| (f.file.as_str(), f)).collect();
        let format_of: Vec<String> = names
            .iter()
            .enumerate()
            .map(
                |(f, name)| match (&read_sum[f], old_row.get(name.as_str())) {
                    (Some(r), _) if !r.format.is_empty() => r.format.clone(),
                    (_, Some(o)) => o.format.clone(),
                    _ => Format::Runlog.name().to_string(),
                },
            )
            .collect();
        // An event of file f at `line` was in the warehouse before this run.
        let grown_lines: Vec<Option<u64>> = names
            .iter()
            .map(
                |name| match to_read.iter().find(|i| &i.name == name).map(|i| i.change) {
                    None => Some(u64::MAX),
                    Some(Change::Grown { lines, .. }) => Some(lines),
                    Some(_) => None,
                },
            )
            .collect();
        let mut touched: BTreeSet<u32> = new_by_bucket.keys().copied().collect();
        for name in &retracted {
            if let Some(fp) = m.inputs.get(*name) {
                touched.extend(fp.buckets.iter().copied());
            } else {
                touched.extend(0..b_count);
            }
        }
        let staged = Staged::begin_at(self.root.clone(), commit::new_ingest_id())?;
        let dir = staged.dir().to_path_buf();
        let id = staged.id().to_string();
        let retracted_idx: HashSet<u32> = retracted.iter().map(|n| idx[*n]).collect();
        let mut bucket_files: BTreeMap<String, BTreeMap<u32, Vec<String>>> = BTreeMap::new();
        let mut bucket_counts = BTreeMap::new();
        let mut acc = vec![FileSummary::default(); n];
        let mut old_kept = vec![0u64; n];
        let mut conflicts: Vec<Reject> = Vec::new();
        let mut moved: HashMap<String, String> = HashMap::new();
        let mut file_buckets: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
        let ctx = Buckets {
            root: self.root,
            m,
            names: &names,
            idx: &idx,
            format_of: &format_of,
            retracted: &retracted,
            retracted_idx: &retracted_idx,
            grown_lines: &grown_lines,
            losers,
            dir: &dir,
            id: &id,
        };
        // A shard does its own buckets; shard 0 assembles every touched bucket too (the
        // shared tables count every agent), without reducing or writing the others'. The
        // other shards look into them only when a bucket could ask for the full re-read
        // (so that every shard of a round decides alike).
        let may_refuse = losers > 0 || format_of.iter().any(|f| f != Format::Runlog.name());
        let work: Vec<(u32, Vec<Event>)> = touched
            .iter()
            .map(|&b| (b, new_by_bucket.remove(&b).unwrap_or_default()))
            .filter(|(b, _)| t.part.owns(*b) || t.part.shared() || may_refuse)
            .collect();
        // Buckets in parallel: each holds its touched agents only.
        let outs: Vec<std::result::Result<BucketOut, String>> = work
            .into_par_iter()
            .with_max_len(1)
            .map(|(b, new)| ctx.bucket(b, new, t.part.owns(b)))
            .collect::<Result<_>>()?;
        let scope: BTreeSet<u32> = touched
            .iter()
            .copied()
            .filter(|&b| t.part.owns(b))
            .collect();
        for out in outs {
            let out = match out {
                Ok(o) => o,
                Err(why) => return Ok(Plan::Full(why)),
            };
            let b = out.b;
            for f in 0..n {
                acc[f].kept += out.acc[f].kept;
                acc[f].duplicates += out.acc[f].duplicates;
                acc[f].rejects += out.acc[f].rejects;
                acc[f].events += out.acc[f].events;
                old_kept[f] += out.old_kept[f];
            }
            conflicts.extend(out.conflicts);
            moved.extend(out.moved);
            for f in out.files_here {
                file_buckets[f as usize].insert(b);
            }
            if !scope.contains(&b) {
                continue;
            }
            for (table, fs) in out.written {
                if !fs.is_empty() {
                    bucket_files.entry(table).or_default().insert(b, fs);
                }
            }
            if out.counts[0] > 0 {
                bucket_counts.insert(b, out.counts);
            }
            a.buckets_written += 1;
        }
        let work = |shared, index| Work {
            shared,
            index,
            scope,
            bucket_files,
            bucket_counts,
            buckets: b_count,
        };
        if !t.part.shared() {
            return Ok(
                match self.finish(staged, Some(m), work(None, None), std::mem::take(a), t)? {
                    Some(d) => Plan::Done(Box::new(d)),
                    None => Plan::Stale,
                },
            );
        }
        // Conflicting lines' excerpts are the lines themselves (as a full ingest's are).
        let mut with_conflicts = Ingested {
            rejects: conflicts,
            ..Default::default()
        };
        let mut wanted: Vec<(String, String)> = with_conflicts
            .rejects
            .iter()
            .map(|r| (r.file.clone(), String::new()))
            .collect();
        wanted.sort();
        wanted.dedup();
        let files: Vec<ingest::Input> = self
            .local_copies(&wanted, inputs)?
            .into_iter()
            .flatten()
            .collect();
        ingest::excerpt_conflicts(&files, &mut with_conflicts, self.opts);
        // The files table: the old rows, what this run read, and what assembly found.
        let mut rows = Vec::with_capacity(n);
        for (f, name) in names.iter().enumerate() {
            let mut r = match old_row.get(name.as_str()) {
                Some(o) if !retracted.contains(name.as_str()) => (*o).clone(),
                _ => FileSummary {
                    file: name.clone(),
                    ..Default::default()
                },
            };
            if let Some(s) = &read_sum[f] {
                r.bytes += s.bytes;
                r.lines += s.lines;
                r.blank += s.blank;
                r.rejects += s.rejects;
            }
            r.format = format_of[f].clone();
            r.kept = (r.kept + acc[f].kept).saturating_sub(old_kept[f]);
            r.events = (r.events + acc[f].events).saturating_sub(old_kept[f]);
            r.duplicates += acc[f].duplicates;
            r.rejects += acc[f].rejects;
            rows.push(r);
        }
        let mut rejects: Vec<Reject> = old_rejects
            .into_iter()
            .filter(|r| !retracted.contains(r.file.as_str()))
            .map(|mut r| {
                if let Some(now) = moved.get(&r.reason) {
                    r.reason = now.clone();
                }
                r
            })
            .collect();
        rejects.append(&mut new_rejects);
        rejects.append(&mut with_conflicts.rejects);
        ingest::sort_rejects(&mut rejects, &names);
        // The index: this run's files fingerprinted again.
        let mut index = m.inputs.clone();
        for i in &to_read {
            let f = idx[i.name.as_str()] as usize;
            let (lines, mut buckets) = match (i.change, index.get(&i.name)) {
                (Change::Grown { lines, .. }, Some(fp)) => (lines, fp.buckets.clone()),
                _ => (0, BTreeSet::new()),
            };
            buckets.extend(file_buckets[f].iter().copied());
            let mut fp = Fingerprint::new(&i.scan, lines + read_lines[f], &format_of[f], &i.rel);
            fp.buckets = buckets;
            index.insert(i.name.clone(), fp);
        }
        for (f, name) in names.iter().enumerate() {
            if let Some(fp) = index.get_mut(name) {
                fp.buckets.extend(file_buckets[f].iter().copied());
            }
        }
        self.stamp(&mut index, inputs);
        let shared = Ingested {
            files: rows,
            rejects,
            ..Default::default()
        };
        let done = self.finish(
            staged,
            Some(m),
            work(Some(shared), Some(index)),
            std::mem::take(a),
            t,
        )?;
        Ok(match done {
            Some(d) => Plan::Done(Box::new(d)),
            None => Plan::Stale,
        })
    }

    /// Writes the shared tables (shard 0) and commits this append's `work` onto the latest
    /// version, or `None` when that is not the version `old` it planned on (nor a version
    /// of the same round, whose other shards touched other buckets).
    fn finish(
        &self,
        staged: Staged,
        old: Option<&Manifest>,
        work: Work,
        mut a: Appended,
        t: &Target,
    ) -> Result<Option<Appended>> {
        let dir = staged.dir().to_path_buf();
        let Work {
            shared,
            index,
            scope,
            bucket_files: mine,
            bucket_counts: mine_counts,
            buckets,
        } = work;
        let shared_files = match &shared {
            Some(sh) => {
                let batches = store::some_batches(sh, &Derived::default(), SHARED_TABLES)?;
                Some(store::write_parts(
                    &dir,
                    &format!("{}-shared", staged.id()),
                    &batches,
                )?)
            }
            None => None,
        };
        // A table with no rows in any bucket is one empty file (readers need a file):
        // written for each table that may be empty after this append. A shard of a round
        // cannot tell (the other shards may empty their buckets): it writes one for every
        // per-agent table it has no rows of, and names it only if the table is empty.
        let mut empties: BTreeMap<&str, String> = BTreeMap::new();
        for &table in TABLES {
            let empty = if SHARED_TABLES.contains(&table) {
                match &shared_files {
                    Some(sf) => sf.get(table).is_none_or(Vec::is_empty),
                    None => old.is_none_or(|m| m.tables.get(table).is_none_or(Vec::is_empty)),
                }
            } else {
                let others = t.part.count > 1
                    || old
                        .and_then(|m| m.bucket_files.get(table))
                        .is_none_or(|by_b| {
                            by_b.iter()
                                .all(|(b, fs)| scope.contains(b) || fs.is_empty())
                        });
                others && mine.get(table).is_none_or(BTreeMap::is_empty)
            };
            if empty {
                let rel = format!("{table}/part-{}-empty.parquet", staged.id());
                store::write_parquet(&dir.join(&rel), table, &[])?;
                empties.insert(table, rel);
            }
        }
        let mut value = match &shared {
            Some(sh) => {
                let mut summary = runlog_core::summarize(sh, 0, 0.0);
                summary.skipped_files = self.skipped;
                summary.seconds = self.start.elapsed().as_secs_f64();
                summary.mb_per_s = summary.bytes as f64 / 1e6 / summary.seconds.max(1e-9);
                Some(serde_json::to_value(&summary)?)
            }
            None => None,
        };
        if let Some(o) = value.as_mut().and_then(|v| v.as_object_mut()) {
            let mut appended =
                serde_json::json!({"new_files": a.new_files, "new_lines": a.new_lines});
            if let Some(why) = &a.full_rewrite {
                appended["fallback"] = why.as_str().into();
            }
            o.insert("appended".into(), appended);
        }
        let prior: HashSet<&String> = old
            .map(|m| m.tables.values().flatten().collect())
            .unwrap_or_default();
        let own: Vec<String> = mine
            .values()
            .flat_map(|by_b| by_b.values().flatten())
            .chain(shared_files.iter().flat_map(|sf| sf.values().flatten()))
            .chain(empties.values())
            .filter(|f| !prior.contains(f))
            .cloned()
            .collect();
        a.bytes_written = own
            .iter()
            .map(|f| std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0))
            .sum();
        let (id, part) = (staged.id().to_string(), &t.part);
        let mut stale = false;
        let mut landed: Vec<u32> = Vec::new();
        let committed = commit::commit_with(
            staged,
            &own,
            |current| {
                let mut refuse = || {
                    stale = true;
                    Err(Error::Invalid("another writer committed first".into()))
                };
                // The version planned on, or one of the same round with none of this
                // run's shards landed: the buckets merge (the round's shards' are disjoint).
                let round = current.and_then(|m| m.round.as_ref());
                let fits = match round {
                    None => current == old,
                    Some(r) => {
                        r.count == part.count
                            && r.inputs == t.key
                            && r.base == t.base
                            && r.landed.is_disjoint(&part.indices)
                    }
                };
                if !fits {
                    return refuse();
                }
                let mut bucket_files = current.map(|m| m.bucket_files.clone()).unwrap_or_default();
                let mut bucket_counts =
                    current.map(|m| m.bucket_counts.clone()).unwrap_or_default();
                for table in per_agent_tables() {
                    let e = bucket_files.entry(table.to_string()).or_default();
                    e.retain(|b, _| !scope.contains(b));
                    if let Some(by_b) = mine.get(table) {
                        e.extend(by_b.iter().map(|(b, fs)| (*b, fs.clone())));
                    }
                }
                bucket_counts.retain(|b, _| !scope.contains(b));
                bucket_counts.extend(mine_counts.iter().map(|(b, c)| (*b, *c)));
                let mut tables: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for &table in TABLES {
                    let mut fs: Vec<String> = if SHARED_TABLES.contains(&table) {
                        match &shared_files {
                            Some(sf) => sf.get(table).cloned().unwrap_or_default(),
                            None => current
                                .and_then(|m| m.tables.get(table))
                                .cloned()
                                .unwrap_or_default(),
                        }
                    } else {
                        bucket_files
                            .get(table)
                            .into_iter()
                            .flat_map(|by_b| by_b.values().flatten().cloned())
                            .collect()
                    };
                    if fs.is_empty() {
                        // Not foreseen (a shared table's files never go: shard 0 names
                        // one at least): plan again.
                        match empties.get(table) {
                            Some(e) => fs.push(e.clone()),
                            None => return refuse(),
                        }
                    }
                    tables.insert(table.to_string(), fs);
                }
                // The round: the index moves on when its last shard lands.
                let mut r = round.cloned().unwrap_or_else(|| AppendRound {
                    count: part.count,
                    inputs: t.key.clone(),
                    base: t.base,
                    landed: BTreeSet::new(),
                    next: None,
                });
                r.landed.extend(part.indices.iter().copied());
                if index.is_some() {
                    r.next = index.clone();
                }
                landed = r.landed.iter().copied().collect();
                let (round, inputs) = if r.landed.len() as u32 == r.count {
                    let next = r.next.take().ok_or_else(|| {
                        Error::Invalid("an append round closing without shard 0's index".into())
                    })?;
                    (None, next)
                } else {
                    let base = old.map(|m| m.inputs.clone()).unwrap_or_default();
                    (Some(r), base)
                };
                // The accounting: shard 0's (the shared tables'), agents and intervals of
                // every bucket.
                let mut summary = value
                    .clone()
                    .or_else(|| current.map(|m| m.summary.clone()))
                    .unwrap_or_else(|| serde_json::json!({}));
                if let Some(o) = summary.as_object_mut() {
                    let sum = |k: usize| bucket_counts.values().map(|c| c[k]).sum::<u64>();
                    o.insert("agents".into(), sum(0).into());
                    o.insert("intervals".into(), sum(1).into());
                }
                Ok(Manifest {
                    format: MANIFEST_FORMAT.into(),
                    ingest_id: id.clone(),
                    created_at: chrono::Utc::now().to_rfc3339(),
                    tables,
                    summary,
                    shards: None,
                    inputs,
                    buckets,
                    bucket_files,
                    bucket_counts,
                    round,
                })
            },
            self.gc,
        );
        match committed {
            Ok(m) => {
                a.summary = serde_json::from_value(m.summary.clone()).ok();
                if part.count > 1 {
                    a.round = Some(RoundStatus {
                        count: part.count,
                        ran: part.indices.iter().copied().collect(),
                        landed,
                        already: false,
                    });
                }
                a.manifest = Some(m);
                Ok(Some(a))
            }
            Err(_) if stale => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// What one bucket's append found and wrote.
struct BucketOut {
    b: u32,
    /// Per input file: what assembly found in the bucket (kept, duplicates, rejects, events).
    acc: Vec<FileSummary>,
    /// Per input file: the kept events of the warehouse given to the assembly.
    old_kept: Vec<u64>,
    conflicts: Vec<Reject>,
    /// Kept events a new line with the same content won over: the reason of a line that
    /// conflicted with the old one, and that of a line conflicting with the new one.
    moved: Vec<(String, String)>,
    /// Input files with events in the bucket.
    files_here: BTreeSet<u32>,
    /// Per-agent table -> the bucket's files (none: the table has no rows in it).
    written: BTreeMap<String, Vec<String>>,
    /// Agents and intervals in the bucket.
    counts: [u64; 2],
}

/// What every bucket of one incremental append shares.
struct Buckets<'a> {
    root: &'a Root,
    m: &'a Manifest,
    names: &'a [String],
    idx: &'a HashMap<&'a str, u32>,
    format_of: &'a [String],
    retracted: &'a HashSet<&'a str>,
    retracted_idx: &'a HashSet<u32>,
    /// Per input file: lines up to which its events were in the warehouse before.
    grown_lines: &'a [Option<u64>],
    losers: u64,
    dir: &'a Path,
    id: &'a str,
}

impl Buckets<'_> {
    /// Appends the new events `new` of bucket `b` (see the module documentation), or says
    /// why the warehouse cannot tell exactly. Without `write` (another shard's bucket) the
    /// touched agents are assembled for the accounting only: not reduced, nothing written.
    fn bucket(
        &self,
        b: u32,
        new: Vec<Event>,
        write: bool,
    ) -> Result<std::result::Result<BucketOut, String>> {
        let Buckets {
            root,
            m,
            names,
            idx,
            format_of,
            retracted,
            retracted_idx,
            grown_lines,
            losers,
            dir,
            id,
        } = *self;
        let n = names.len();
        let is_old = |e: &Event| grown_lines[e.file as usize].is_some_and(|l| e.line <= l);
        let file_of = |t: &str| -> Vec<String> {
            m.bucket_files
                .get(t)
                .and_then(|by_b| by_b.get(&b))
                .cloned()
                .unwrap_or_default()
        };
        let events_files = file_of("events");
        // The bucket's kept events, as batches; the agents this run touches are those
        // of the new events and of the retracted files.
        let mut old_batches = Vec::new();
        for rel in &events_files {
            old_batches.extend(read_parquet(root, rel)?);
        }
        let mut touched_roots: HashSet<String> = new.iter().map(|e| e.root.to_string()).collect();
        if !retracted_idx.is_empty() {
            for batch in &old_batches {
                let roots = store::text_column(batch, "events", "root")?;
                let roots = roots.as_string::<i32>();
                for (i, name) in store::events_file_names(batch)?.iter().enumerate() {
                    if retracted.contains(name.as_str()) {
                        touched_roots.insert(roots.value(i).to_string());
                    }
                }
            }
        }
        let (touched_batches, untouched_batches) = split_by_root(&old_batches, &touched_roots)?;
        drop(old_batches);
        let mut kept = Vec::new();
        for batch in &touched_batches {
            kept.extend(events_of(root, batch, idx)?);
        }
        drop(touched_batches);
        let before = kept.len();
        kept.retain(|e| !retracted_idx.contains(&e.file));
        let dropped = before - kept.len();
        if let Some(e) = kept.iter().find(|e| format_of[e.file as usize] != "runlog") {
            return Ok(Err(format!(
                "agent {} has events of an imported format ({}), whose numbers depend on \
                     every file",
                e.root, names[e.file as usize]
            )));
        }
        // A new line winning over a kept event (same root and seq, earlier in (file, line)
        // order): with the same content, the lines that lost to the kept event lose to the
        // new one alike (their conflicts name it now), and the kept event is a duplicate.
        // With other content their fate would change, and the warehouse does not keep them.
        let mut moved = Vec::new();
        {
            let mut first: HashMap<(&str, u64), &Event> = HashMap::new();
            for e in &new {
                let w = first.entry((e.root.as_str(), e.seq)).or_insert(e);
                if (e.file, e.line) < (w.file, w.line) {
                    *w = e;
                }
            }
            for e in &kept {
                let Some(w) = first.get(&(e.root.as_str(), e.seq)) else {
                    continue;
                };
                if (w.file, w.line) > (e.file, e.line) {
                    continue;
                }
                let (wn, en) = (&names[w.file as usize], &names[e.file as usize]);
                if losers > 0 && !ingest::same_content(w, e) {
                    return Ok(Err(format!(
                        "a new line ({wn}:{}) would win over the event kept from {en}:{} with \
                         other content while the warehouse holds duplicate or conflicting \
                         lines, whose events it does not keep",
                        w.line, e.line
                    )));
                }
                let (root, seq) = (e.root.as_str(), e.seq);
                moved.push((
                    ingest::conflict_reason(en, e.line, root, seq),
                    ingest::conflict_reason(wn, w.line, root, seq),
                ));
            }
        }
        // The touched agents assembled again, by the full ingest's own assembly.
        let old_count = kept.len();
        let (mut acc, mut old_kept) = (vec![FileSummary::default(); n], vec![0u64; n]);
        let mut parts: Vec<FileRead> = names
            .iter()
            .enumerate()
            .map(|(f, name)| {
                let mut r = FileRead {
                    format: Format::Runlog,
                    ..Default::default()
                };
                r.summary.file = name.clone();
                r.summary.format = format_of[f].clone();
                r
            })
            .collect();
        for e in kept.into_iter().chain(new) {
            if is_old(&e) {
                old_kept[e.file as usize] += 1;
            }
            let f = e.file as usize;
            parts[f].events.push(e);
        }
        let mut ing_b = ingest::assemble(parts);
        for (f, s) in ing_b.files.iter().enumerate() {
            acc[f].kept += s.kept;
            acc[f].duplicates += s.duplicates;
            acc[f].rejects += s.rejects;
            acc[f].events += s.events;
        }
        let conflicts = std::mem::take(&mut ing_b.rejects);
        let files_here: BTreeSet<u32> = ing_b
            .agents
            .iter()
            .flat_map(|a| &a.events)
            .map(|e| e.file)
            .collect();
        if !write {
            return Ok(Ok(BucketOut {
                b,
                acc,
                old_kept,
                conflicts,
                moved,
                files_here,
                written: BTreeMap::new(),
                counts: [0, 0],
            }));
        }
        let derived = reduce_all(&ing_b);
        // The derived tables: a file holding touched agents' rows is written again without
        // them, the touched agents' rows go into a new file, the other files stay.
        let bid = format!("{id}-b{b:03}");
        let mut written: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut rows: HashMap<&str, u64> = HashMap::new();
        for t in per_agent_tables().into_iter().filter(|t| *t != "events") {
            let fresh = store::derived_batch(&derived, t)?;
            let (files, n) = derived_files(root, dir, &bid, t, &file_of(t), &touched_roots, fresh)?;
            if !files.is_empty() {
                written.insert(t.to_string(), files);
            }
            rows.insert(t, n);
        }
        let (agents, intervals) = (rows["agents"], rows["intervals"]);
        // `events`: only the new events in a file of their own, unless a kept event
        // was retracted or lost to a new line, or the bucket has files enough: then
        // the bucket's events in one file.
        let still_old = ing_b
            .agents
            .iter()
            .flat_map(|a| &a.events)
            .filter(|e| is_old(e))
            .count();
        let append_only =
            dropped == 0 && still_old == old_count && events_files.len() < MAX_EVENTS_FILES;
        let mut tables: BTreeMap<&'static str, Vec<RecordBatch>> = BTreeMap::new();
        let events_list = if append_only {
            let fresh = Ingested {
                files: ing_b.files.clone(),
                agents: ing_b
                    .agents
                    .iter()
                    .map(|ag| ingest::Agent {
                        root: ag.root.clone(),
                        events: ag.events.iter().filter(|e| !is_old(e)).cloned().collect(),
                    })
                    .filter(|ag| !ag.events.is_empty())
                    .collect(),
                ..Default::default()
            };
            let mut list = events_files.clone();
            if !fresh.agents.is_empty() {
                list.extend(store::write_events_parts(dir, &bid, &fresh, None)?);
            }
            list
        } else {
            let mut all = untouched_batches;
            all.extend(store::events_batches(&ing_b)?);
            all.retain(|b| b.num_rows() > 0);
            tables.insert("events", all);
            Vec::new()
        };
        tables.retain(|_, batches| !batches.is_empty());
        // The kept rows come in many small batches (one per old batch and run of roots),
        // and parts are cut by batch count: whole batches again, or every compaction made
        // dozens of files per bucket, and each later append compacted once more.
        for batches in tables.values_mut() {
            *batches = rebatch(batches)?;
        }
        written.extend(store::write_parts(dir, &bid, &tables)?);
        if append_only && !events_list.is_empty() {
            written.insert("events".into(), events_list);
        }
        Ok(Ok(BucketOut {
            b,
            acc,
            old_kept,
            conflicts,
            moved,
            files_here,
            written,
            counts: [agents, intervals],
        }))
    }
}

/// Writes every per-agent table of one bucket's agents `ing` (reduced into `derived`).
fn write_bucket(
    dir: &Path,
    id: &str,
    b: u32,
    ing: &Ingested,
    derived: &Derived,
) -> Result<BTreeMap<String, Vec<String>>> {
    let id = format!("{id}-b{b:03}");
    let derived_tables: Vec<&'static str> = per_agent_tables()
        .into_iter()
        .filter(|t| *t != "events")
        .collect();
    let batches = store::some_batches(ing, derived, &derived_tables)?;
    let mut files = store::write_parts(dir, &id, &batches)?;
    files.insert(
        "events".into(),
        store::write_events_parts(dir, &id, ing, None)?,
    );
    Ok(files)
}

/// One file of a bucket's derived table after an append: a committed file kept as it is
/// (its bytes, read to look at its roots, kept for a compaction), or rows to write.
enum Piece {
    Kept {
        rel: String,
        rows: u64,
        bytes: bytes::Bytes,
    },
    New(Vec<RecordBatch>),
}

impl Piece {
    fn rows(&self) -> u64 {
        match self {
            Piece::Kept { rows, .. } => *rows,
            Piece::New(batches) => batches.iter().map(|b| b.num_rows() as u64).sum(),
        }
    }
}

/// The files of the derived table `table` of one bucket after an append that touched the
/// agents `touched` (whose rows are now `fresh`), and its rows. Of the bucket's `files`,
/// only those holding touched agents' rows (found by their `root` column alone) are
/// written again, without those rows; the others stay named as they are, and `fresh` is a
/// new file. So an append that touches new agents only writes no old file, and one that
/// touches yesterday's agents writes yesterday's file again, not the bucket's history.
/// Past [`MAX_DERIVED_FILES`] files, the smallest files but the new one are merged into
/// one (a file is merged again only while it is among the smallest, so a compaction does
/// not rewrite the history). Files are written under `dir`, ids from `bid`.
fn derived_files(
    root: &Root,
    dir: &Path,
    bid: &str,
    table: &'static str,
    files: &[String],
    touched: &HashSet<String>,
    fresh: RecordBatch,
) -> Result<(Vec<String>, u64)> {
    let mut pieces = Vec::with_capacity(files.len() + 1);
    for rel in files {
        let bytes = parquet_bytes(root, rel)?;
        let roots = decode_parquet(bytes.clone(), Some("root"))?;
        let (hit, _) = split_by_root(&roots, touched)?;
        if hit.iter().all(|b| b.num_rows() == 0) {
            let rows = roots.iter().map(|b| b.num_rows() as u64).sum();
            pieces.push(Piece::Kept {
                rel: rel.clone(),
                rows,
                bytes,
            });
            continue;
        }
        let (_, mut keep) = split_by_root(&decode_parquet(bytes, None)?, touched)?;
        keep.retain(|b| b.num_rows() > 0);
        if !keep.is_empty() {
            pieces.push(Piece::New(keep));
        }
    }
    // The touched agents' rows are not merged with others: those agents are the likeliest
    // to be touched again by the next append (agents running on), which would then write
    // the others' rows again with them, day after day.
    let settled = pieces.len();
    if fresh.num_rows() > 0 {
        pieces.push(Piece::New(vec![fresh]));
    }
    if pieces.len() > MAX_DERIVED_FILES {
        // Merge the smallest of the others into one, leaving MAX_DERIVED_FILES.
        let mut order: Vec<usize> = (0..settled).collect();
        order.sort_by_key(|&k| (pieces[k].rows(), k));
        let merge: HashSet<usize> = order[..pieces.len() - MAX_DERIVED_FILES + 1]
            .iter()
            .copied()
            .collect();
        let mut merged = Vec::new();
        let mut rest = Vec::with_capacity(MAX_DERIVED_FILES);
        for (k, p) in pieces.into_iter().enumerate() {
            match (merge.contains(&k), p) {
                (false, p) => rest.push(p),
                (true, Piece::New(b)) => merged.extend(b),
                (true, Piece::Kept { bytes, .. }) => merged.extend(decode_parquet(bytes, None)?),
            }
        }
        rest.push(Piece::New(merged));
        pieces = rest;
    }
    let total = pieces.iter().map(Piece::rows).sum();
    let mut names = Vec::with_capacity(pieces.len());
    for (k, p) in pieces.into_iter().enumerate() {
        match p {
            Piece::Kept { rel, .. } => names.push(rel),
            Piece::New(batches) => {
                let one = BTreeMap::from([(table, rebatch(&batches)?)]);
                let written = store::write_parts(dir, &format!("{bid}-{k:02}"), &one)?;
                names.extend(written.into_values().flatten());
            }
        }
    }
    Ok((names, total))
}

/// Reads a whole table of the version `m` with `decode`.
fn read_table<T>(
    root: &Root,
    m: &Manifest,
    table: &str,
    decode: impl Fn(&RecordBatch) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for rel in m.tables.get(table).into_iter().flatten() {
        for b in read_parquet(root, rel)? {
            out.extend(decode(&b)?);
        }
    }
    Ok(out)
}

fn read_files_table(root: &Root, m: &Manifest) -> Result<Vec<FileSummary>> {
    read_table(root, m, "files", store::files_from_batch)
}

/// One committed Parquet file's batches, through the warehouse's store.
fn read_parquet(root: &Root, rel: &str) -> Result<Vec<RecordBatch>> {
    decode_parquet(parquet_bytes(root, rel)?, None)
}

/// One committed file's bytes, through the warehouse's store.
fn parquet_bytes(root: &Root, rel: &str) -> Result<bytes::Bytes> {
    use object_store::ObjectStoreExt;
    block_on(async {
        root.store
            .get(&root.path(rel))
            .await
            .map_err(|e| root.store_error(rel, e))?
            .bytes()
            .await
            .map_err(|e| root.store_error(rel, e))
    })
}

/// A Parquet file's batches: every column, or the one column `only`.
fn decode_parquet(bytes: bytes::Bytes, only: Option<&str>) -> Result<Vec<RecordBatch>> {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::parquet::arrow::ProjectionMask;
    let mut builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    if let Some(name) = only {
        let column = builder.schema().index_of(name)?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), [column]);
        builder = builder.with_projection(mask);
    }
    Ok(builder
        .build()?
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// The events of a batch of the `events` table, numbered by `idx`.
fn events_of(root: &Root, b: &RecordBatch, idx: &HashMap<&str, u32>) -> Result<Vec<Event>> {
    let names = store::events_file_names(b)?;
    store::events_from_batch(b)?
        .into_iter()
        .zip(names)
        .map(|(mut e, name)| {
            e.file = *idx.get(name.as_str()).ok_or_else(|| {
                root.error(format!(
                    "its events name the input {name}, which its files table does not: \
                     damaged; ingest the logs again"
                ))
            })?;
            Ok(e)
        })
        .collect()
}

/// Batches of a per-agent table split into the rows of the agents in `roots` and the others.
/// `batches` (of one table) as batches of [`store::EVENTS_BATCH_ROWS`] rows, the last one
/// shorter: the batch size the writers cut parts by.
fn rebatch(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    let Some(first) = batches.first() else {
        return Ok(Vec::new());
    };
    let all = datafusion::arrow::compute::concat_batches(&first.schema(), batches)?;
    let rows = store::EVENTS_BATCH_ROWS;
    Ok((0..all.num_rows())
        .step_by(rows)
        .map(|at| all.slice(at, rows.min(all.num_rows() - at)))
        .collect())
}

fn split_by_root(
    batches: &[RecordBatch],
    roots: &HashSet<String>,
) -> Result<(Vec<RecordBatch>, Vec<RecordBatch>)> {
    use datafusion::arrow::array::BooleanArray;
    use datafusion::arrow::compute::filter_record_batch;
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for b in batches {
        let col = store::text_column(b, "a per-agent", "root")?;
        let col = col.as_string::<i32>();
        let mask: BooleanArray = col
            .iter()
            .map(|r| Some(roots.contains(r.unwrap_or_default())))
            .collect();
        let not: BooleanArray = mask.iter().map(|m| m.map(|v| !v)).collect();
        yes.push(filter_record_batch(b, &mask)?);
        no.push(filter_record_batch(b, &not)?);
    }
    yes.retain(|b| b.num_rows() > 0);
    no.retain(|b| b.num_rows() > 0);
    Ok((yes, no))
}
