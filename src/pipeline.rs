//! The pipeline: the one way logs become tables. [`run`] takes the listed inputs
//! ([`crate::inputs::list`]), the read options and a [`Target`]:
//!
//! - **tables** for `query`, `report` and `replay` over log PATHs: in memory
//!   ([`crate::loaded::Loaded`]), or, for inputs larger than memory, spilled through
//!   partitions on disk (see [`runlog_core::ingest::spill`]) into the tables and columns
//!   a question reads ([`spilled_tables`]), or, when those are not known, into a temporary
//!   warehouse;
//! - **a warehouse**, committed as [`CommitMode`] says: replacing everything, one shard's
//!   entry (`--shard I/N`), or appended to (`--append`, [`crate::append`]: only what is new
//!   is read).
//!
//! Every mode goes the same way:
//!
//! 1. read, validate, order and reduce (`runlog_core`);
//! 2. refuse the ingest when it has more rejects than `--max-rejects` allows — checked here
//!    and only here, before anything is written where the count is known then (in memory),
//!    else before the commit;
//! 3. write the Parquet files through one [`Staged`] write (`crate::store` encodes them);
//! 4. commit (`crate::commit`): one atomic manifest rename, with the fingerprint index
//!    ([`commit::index`]) a later append plans on.
//!
//! An error or a refusal at any step drops the [`Staged`] write, which removes every file
//! and folder it made: the warehouse is left exactly as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;

use crate::append::{self, Appended};
use crate::commit::shards::{self, ShardStatus};
use crate::commit::{self, GcPolicy, Manifest, Staged};
use crate::error::{Error, Result};
use crate::inputs::{self, DownloadProgress, Resolved, Sources};
use crate::loaded::Loaded;
use crate::objstore::Root;
use crate::spilled_tables;
use crate::store::{self, TABLES};
use runlog_core::ingest::{self, IngestOptions, Ingested, Inputs};
use runlog_core::reduce::Derived;
use runlog_core::shard::{Shard, SHARED_TABLES};
use runlog_core::table::Table;
use runlog_core::{reduce_parts, summarize, Summary};

/// What [`run`] makes of the logs.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// The tables, to query: in memory, or through `memory`'s spill partitions into a
    /// temporary warehouse (removed when dropped); with `shard`, only that shard's agents
    /// (the file accounting and rejects stay those of the whole input). A question that
    /// names the tables and columns it reads (`only`) gets, when spilled, only those, in
    /// memory ([`spilled_tables`]), from only the kinds of events they depend on
    /// ([`IngestOptions::keep`]).
    Tables {
        memory: Memory,
        shard: Option<Shard>,
        only: Option<Only<'a>>,
    },
    /// The warehouse at `at` (a folder, or a store's URL for an append), committed as
    /// `write.commit` says.
    Warehouse {
        at: &'a Path,
        write: &'a WriteOptions,
    },
}

/// What a question reads: the tables it names and, when known, the columns it reads of
/// each (`crate::plan_tables::Demand`).
#[derive(Debug, Clone, Copy)]
pub struct Only<'a> {
    pub tables: &'a [Table],
    pub columns: Option<&'a BTreeMap<Table, Vec<String>>>,
}

/// The tables [`Target::Tables`] made.
pub enum Tables {
    /// In memory.
    Loaded(Box<Loaded>),
    /// Spilled: a temporary warehouse holding them, removed when dropped.
    Stored(tempfile::TempDir),
    /// Spilled, for a question whose columns are known: the tables it reads, with those
    /// columns, as record batches.
    Kept(BTreeMap<Table, Vec<RecordBatch>>),
}

/// What [`run`] made.
pub enum Made {
    Tables(Tables),
    /// A full or shard commit.
    Written(Box<Written>),
    /// An append.
    Appended(Box<Appended>),
}

impl Made {
    /// What it is, in words (for an error that expected another).
    fn what(&self) -> &'static str {
        match self {
            Made::Tables(_) => "tables",
            Made::Written(_) => "a full or shard commit",
            Made::Appended(_) => "an append",
        }
    }

    fn expected(self, what: &str) -> Error {
        Error::Invalid(format!("expected {what}, made {}", self.what()))
    }

    /// The tables of a [`Target::Tables`] run.
    pub fn into_tables(self) -> Result<Tables> {
        match self {
            Made::Tables(t) => Ok(t),
            other => Err(other.expected("tables")),
        }
    }

    /// The commit of a full or shard run.
    pub fn into_written(self) -> Result<Written> {
        match self {
            Made::Written(w) => Ok(*w),
            other => Err(other.expected("a full or shard commit")),
        }
    }

    /// What an append did.
    pub fn into_appended(self) -> Result<Appended> {
        match self {
            Made::Appended(a) => Ok(*a),
            other => Err(other.expected("an append")),
        }
    }
}

/// Reads the listed `sources` and makes `target` of them (see the module documentation).
/// Objects in stores are downloaded as the target needs them (an append only those its
/// fingerprint index does not know unchanged), reported to `downloads`.
pub fn run(
    sources: &Sources,
    opts: &IngestOptions,
    target: Target,
    downloads: Option<DownloadProgress>,
) -> Result<Made> {
    if let Target::Warehouse { at, write } = target {
        if let CommitMode::Append { shard } = write.commit {
            let root = Root::open(at)?;
            let a = append::append(&root, sources, opts, write.gc, shard, downloads)?;
            return Ok(Made::Appended(Box::new(a)));
        }
    }
    let resolved = inputs::fetch(sources, downloads)?;
    match target {
        Target::Tables {
            memory: Memory::InMemory,
            shard,
            ..
        } => {
            let loaded = load_resolved(&resolved, opts, shard)?;
            Ok(Made::Tables(Tables::Loaded(Box::new(loaded))))
        }
        Target::Tables {
            memory: Memory::Spilled(p),
            shard: None,
            only:
                Some(Only {
                    tables,
                    columns: Some(columns),
                }),
        } if opts.keep.is_some() || text_bytes(sources) <= WHOLE_TABLES_MAX_BYTES => {
            let spill = temp_dir("runlog-spill-")?;
            let batches = spilled_tables::tables(
                &resolved.inputs,
                opts,
                tables,
                columns,
                &spill.path().join("spill"),
                p,
            )?;
            Ok(Made::Tables(Tables::Kept(batches)))
        }
        Target::Tables { memory, shard, .. } => {
            let scratch = temp_dir("runlog-logs-")?;
            let write = WriteOptions {
                commit: match shard {
                    Some(shard) => CommitMode::Shard {
                        shard,
                        reshard: false,
                    },
                    None => CommitMode::Full,
                },
                memory,
                max_rejects: None,
                gc: GcPolicy::default(),
            };
            ingest_resolved(&resolved, opts, scratch.path(), &write)?;
            Ok(Made::Tables(Tables::Stored(scratch)))
        }
        Target::Warehouse { at, write } => Ok(Made::Written(Box::new(ingest_resolved(
            &resolved, opts, at, write,
        )?))),
    }
}

/// [`run`] of the local files and folders `paths` into tables in memory (tests, benchmarks
/// and library users reading a few logs).
pub fn load(paths: &[PathBuf], opts: &IngestOptions) -> Result<Loaded> {
    let target = Target::Tables {
        memory: Memory::InMemory,
        shard: None,
        only: None,
    };
    match run(&inputs::list(paths)?, opts, target, None)?.into_tables()? {
        Tables::Loaded(l) => Ok(*l),
        _ => Err(Error::Invalid("expected tables in memory".into())),
    }
}

/// [`run`] of `paths` into the warehouse folder `warehouse` as a full or shard commit.
pub fn ingest(
    paths: &[PathBuf],
    opts: &IngestOptions,
    warehouse: &Path,
    w: &WriteOptions,
) -> Result<Written> {
    let target = Target::Warehouse {
        at: warehouse,
        write: w,
    };
    run(&inputs::list(paths)?, opts, target, None)?.into_written()
}

/// A temporary folder named `prefix…` under `TMPDIR`, removed when dropped.
fn temp_dir(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| {
            Error::Invalid(format!(
                "making a temporary folder (set TMPDIR to choose where): {e}"
            ))
        })
}

/// Reads, validates, orders and reduces resolved inputs in memory.
fn load_resolved(
    resolved: &Resolved,
    opts: &IngestOptions,
    shard: Option<Shard>,
) -> Result<Loaded> {
    let start = Instant::now();
    let mut ingested = ingest::ingest_inputs(&resolved.inputs, opts)?;
    if let Some(s) = shard {
        ingested.retain_shard(&s);
    }
    let parts = reduce_in_parts(&ingested);
    let summary = summarize(&ingested, intervals(&parts), start.elapsed().as_secs_f64());
    Ok(Loaded {
        ingested,
        parts,
        summary,
    })
}

/// How an ingest commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitMode {
    /// Replace everything the warehouse holds.
    Full,
    /// Keep only this shard's agents and replace only its entry (`--shard I/N`); with
    /// `reshard`, drop a full ingest or shards of another N first.
    Shard { shard: Shard, reshard: bool },
    /// Add what is new since the last commit (`--append`, [`crate::append`]); with
    /// `shard`, one shard of an append round (`--append --shard I/N`).
    Append { shard: Option<Shard> },
}

/// How much memory an ingest holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// Every event in memory at once.
    InMemory,
    /// Through this many spill partitions on disk (`--spill-partitions P`).
    Spilled(usize),
}

/// The bytes of text the inputs hold: local files' sizes on disk, objects' as listed,
/// gzip and zstd files counted at 8 times their size.
fn text_bytes(sources: &Sources) -> u64 {
    sources
        .files
        .iter()
        .map(|s| {
            let len = s.bytes();
            let name = s.name();
            if name.ends_with(".gz") || name.ends_with(".zst") {
                len * 8
            } else {
                len
            }
        })
        .sum()
}

/// Input bytes up to which a spilled question that reads every event (`events`, `rejects`,
/// `files`, or columns that depend on every kind) gets its tables in memory
/// ([`spilled_tables`]); beyond, through a temporary warehouse, which holds about as much
/// at any size. Those tables grow with the input: a report of 1.96 GB of logs peaked at
/// 0.87–0.90 GB and of 3.7 GB at 1.22 GB (through the warehouse: 0.63–0.75 GB at 1.96 GB,
/// in 1.5 times the time), so this keeps such a question near 1 GB.
pub const WHOLE_TABLES_MAX_BYTES: u64 = 5 << 29;

/// Input bytes from which [`Memory::auto`] spills. In memory an ingest peaks at about 2.5
/// times its input (~510 MB for 192 MB); from here on it would pass 1 GB, while spilled
/// through partitions it costs about as much CPU (2.2 s against 2.1 s for those 192 MB).
pub const SPILL_FROM_BYTES: u64 = 256 << 20;

/// Input bytes per spill partition when [`Memory::auto`] spills. A partition in memory
/// takes about 2.5 times its input, and as many are in memory at once as there are threads:
/// 64 MiB keeps a 2-thread ingest near 0.5 GB at any input size, in half as many files
/// (and file syncs) as 32 MiB made.
pub const SPILL_PARTITION_BYTES: u64 = 64 << 20;

impl Memory {
    /// The default for these inputs: in memory below [`SPILL_FROM_BYTES`], else one partition per
    /// [`SPILL_PARTITION_BYTES`] (gzip and zstd files counted at 8 times their size).
    pub fn auto(paths: &[PathBuf]) -> Memory {
        match inputs::list(paths) {
            Ok(sources) => Memory::auto_for(&sources),
            Err(_) => Memory::InMemory,
        }
    }

    /// [`Memory::auto`] for inputs already listed: local files' sizes on disk, objects'
    /// as listed.
    pub fn auto_for(sources: &Sources) -> Memory {
        let bytes = text_bytes(sources);
        if bytes < SPILL_FROM_BYTES {
            Memory::InMemory
        } else {
            Memory::Spilled(bytes.div_ceil(SPILL_PARTITION_BYTES) as usize)
        }
    }
}

/// `--max-rejects N` or `--max-rejects P%`: how many rejects an ingest may have (a text
/// that is neither fails the ingest before anything is written).
#[derive(Debug, Clone, PartialEq)]
pub struct MaxRejects(pub String);

impl MaxRejects {
    /// The largest number of rejects allowed among `lines` lines.
    pub fn limit(&self, lines: u64) -> std::result::Result<u64, String> {
        let s = &self.0;
        if let Some(p) = s.strip_suffix('%') {
            let pct: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("--max-rejects {s:?}: not a percentage"))?;
            Ok(((pct / 100.0) * lines as f64).floor() as u64)
        } else {
            s.trim()
                .parse()
                .map_err(|_| format!("--max-rejects {s:?}: not a count or a percentage like 0.5%"))
        }
    }

    /// Refuses `rejects` among `lines` when over the limit.
    fn check(&self, rejects: u64, lines: u64) -> Result<()> {
        let max = self.limit(lines).map_err(Error::Invalid)?;
        if rejects > max {
            return Err(Error::TooManyRejects {
                rejects,
                lines,
                limit: self.0.clone(),
            });
        }
        Ok(())
    }
}

/// What [`ingest`] does besides reading.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub commit: CommitMode,
    pub memory: Memory,
    pub max_rejects: Option<MaxRejects>,
    /// What the commit's garbage collection keeps (`--keep-versions`, `--retention`).
    pub gc: GcPolicy,
}

/// What an ingest committed.
#[derive(Debug)]
pub struct Written {
    pub summary: Summary,
    /// The shards in the warehouse after a shard commit.
    pub shard_status: Option<ShardStatus>,
    pub manifest: Manifest,
}

/// A full or shard commit of resolved inputs, the objects' stamps recorded in the
/// fingerprint index (so that a later `--append` of the same prefix need not download them
/// again).
fn ingest_resolved(
    resolved: &Resolved,
    opts: &IngestOptions,
    warehouse: &Path,
    w: &WriteOptions,
) -> Result<Written> {
    ingest_stamped(&resolved.inputs, &resolved.stamps, opts, warehouse, w)
}

fn ingest_stamped(
    inputs: &Inputs,
    stamps: &BTreeMap<String, runlog_core::fingerprint::ObjectStamp>,
    opts: &IngestOptions,
    warehouse: &Path,
    w: &WriteOptions,
) -> Result<Written> {
    let start = Instant::now();
    let shard = match w.commit {
        CommitMode::Full => None,
        CommitMode::Shard { shard, reshard } => {
            // Refuse a shard the warehouse will not take before reading any input.
            shards::precheck(warehouse, shard, reshard)?;
            Some(shard)
        }
        CommitMode::Append { .. } => {
            return Err(Error::Invalid(
                "an append plans on the warehouse's index: run it through pipeline::run".into(),
            ))
        }
    };
    // The fingerprint index, so that a later `--append` knows what was read (shards
    // record none).
    let index_stamps = matches!(w.commit, CommitMode::Full).then_some(stamps);
    let (staged, files, mut summary, fingerprint, index) = match w.memory {
        Memory::InMemory => in_memory(inputs, opts, warehouse, w, shard, index_stamps, start)?,
        Memory::Spilled(p) => {
            let (staged, files, summary, fingerprint) =
                spilled(inputs, opts, warehouse, w, shard, p)?;
            (staged, files, summary, fingerprint, None)
        }
    };
    summary.seconds = start.elapsed().as_secs_f64();
    summary.mb_per_s = summary.bytes as f64 / 1e6 / summary.seconds.max(1e-9);
    let value = serde_json::to_value(&summary)?;
    let (manifest, shard_status) = match w.commit {
        CommitMode::Full | CommitMode::Append { .. } => {
            let index = match index {
                Some(index) => index,
                None => commit::index::fingerprints(inputs, &summary.per_file, stamps)?,
            };
            (
                commit::commit_full(staged, files, value, index, w.gc)?,
                None,
            )
        }
        CommitMode::Shard { shard, reshard } => {
            let (m, s) =
                shards::commit_shard(staged, shard, fingerprint, files, value, reshard, w.gc)?;
            (m, Some(s))
        }
    };
    Ok(Written {
        summary,
        shard_status,
        manifest,
    })
}

type Files = BTreeMap<String, Vec<String>>;
type Stamps = BTreeMap<String, runlog_core::fingerprint::ObjectStamp>;
type Index = BTreeMap<String, runlog_core::fingerprint::Fingerprint>;

/// The name every file of one write is given after `part-`: the ingest's id, then the
/// spill partition, then the shard (last, where [`shards::part_shard`] reads it).
fn part_id(id: &str, partition: Option<usize>, shard: Option<Shard>) -> String {
    let mut s = id.to_string();
    if let Some(p) = partition {
        s.push_str(&format!("-p{p:05}"));
    }
    if let Some(sh) = shard {
        s.push_str(&format!("-s{}of{}", sh.index, sh.count));
    }
    s
}

fn add_files(all: &mut Files, more: Files) {
    for (t, mut names) in more {
        all.entry(t).or_default().append(&mut names);
    }
}

/// Starts the write: a full ingest holds the lock from here to its commit, so no other
/// writer's files come and go meanwhile; a shard takes it only to commit.
fn begin(warehouse: &Path, shard: Option<Shard>) -> Result<Staged> {
    let mut staged = Staged::begin(warehouse, commit::new_ingest_id())?;
    if shard.is_none() {
        staged.lock(Duration::ZERO)?;
    }
    Ok(staged)
}

fn in_memory(
    inputs: &Inputs,
    opts: &IngestOptions,
    warehouse: &Path,
    w: &WriteOptions,
    shard: Option<Shard>,
    stamps: Option<&Stamps>,
    start: Instant,
) -> Result<(Staged, Files, Summary, String, Option<Index>)> {
    let mut ingested = ingest::ingest_inputs(inputs, opts)?;
    if let Some(m) = &w.max_rejects {
        let t = ingested.totals();
        m.check(t.rejects, t.lines)?;
    }
    if let Some(s) = shard {
        ingested.retain_shard(&s);
    }
    let shard_inputs = ingested.inputs_fingerprint();
    let staged = begin(warehouse, shard)?;
    let id = part_id(staged.id(), None, shard);
    // The fingerprints (one more read of every input, at memory speed) are taken while
    // the tables are written, in the gaps the writers leave.
    let (written, index) = rayon::join(
        || {
            write_tables(staged.dir(), &id, &ingested, shard, || {
                let parts = reduce_in_parts(&ingested);
                let summary =
                    summarize(&ingested, intervals(&parts), start.elapsed().as_secs_f64());
                Ok((parts, summary))
            })
        },
        || {
            stamps
                .map(|st| commit::index::fingerprints(inputs, &ingested.files, st))
                .transpose()
        },
    );
    let (files, derived, summary) = written?;
    let index = index?;
    // Everything is written: the process ends soon, and freeing a million events (and
    // their rows) one by one would only delay that (about a tenth of a second per million).
    std::mem::forget(ingested);
    std::mem::forget(derived);
    Ok((staged, files, summary, shard_inputs, index))
}

fn spilled(
    inputs: &Inputs,
    opts: &IngestOptions,
    warehouse: &Path,
    w: &WriteOptions,
    shard: Option<Shard>,
    partitions: usize,
) -> Result<(Staged, Files, Summary, String)> {
    let mut staged = begin(warehouse, shard)?;
    let spill_dir = staged.spill_dir()?;
    let dir = staged.dir().to_path_buf();
    // Partitions are written from several threads at once (see `ingest_partitioned`).
    let written = std::sync::Mutex::new((Files::new(), 0u64, 0u64));
    let per_agent = per_agent_tables();
    let id = staged.id().to_string();
    let totals = ingest::spill::ingest_inputs_partitioned::<Error>(
        inputs,
        opts,
        &spill_dir,
        partitions.max(1),
        |part| {
            let mut ingested = Ingested {
                agents: part.agents,
                files: part.files,
                ..Default::default()
            };
            if let Some(s) = shard {
                ingested.retain_shard(&s);
            }
            let parts = reduce_in_parts(&ingested);
            // `events` is built while it is written; the other tables are small.
            let pid = part_id(&id, Some(part.index), shard);
            let (events, tables) = rayon::join(
                || store::write_events_parts(&dir, &pid, &ingested, None),
                || -> Result<_> {
                    let batches = store::some_batches_of(&ingested, &parts, &per_agent)?;
                    store::write_parts(&dir, &pid, &batches)
                },
            );
            let (events, tables) = (events?, tables?);
            let mut w = written.lock().unwrap_or_else(|e| e.into_inner());
            w.0.entry(Table::Events.to_string())
                .or_default()
                .extend(events);
            add_files(&mut w.0, tables);
            w.1 += ingested.agents.len() as u64;
            w.2 += intervals(&parts);
            Ok(())
        },
    )?;
    let (mut files, agents, intervals) = written.into_inner().unwrap_or_else(|e| e.into_inner());
    // In partition order, whichever thread finished first (names sort by partition).
    for names in files.values_mut() {
        names.sort();
    }
    let mut summary = summarize(&totals, 0, 0.0);
    summary.agents = agents;
    summary.intervals = intervals;
    if let Some(m) = &w.max_rejects {
        // Conflicts are found while partitions are assembled: the count is whole only now.
        m.check(summary.rejects, summary.lines_read)?;
    }
    let shared = shared_batches(&totals, shard)?;
    let id = part_id(&format!("{}-shared", staged.id()), None, shard);
    add_files(&mut files, store::write_parts(&dir, &id, &shared)?);
    let inputs = totals.inputs_fingerprint();
    Ok((staged, files, summary, inputs))
}

/// Parts of the derived tables per thread: the reducer's rows are gathered per part
/// ([`reduce_parts`]), and parts of a quarter of a thread's share keep the cores busy to
/// the end, as `events` parts do.
const REDUCE_PARTS_PER_THREAD: usize = 4;

fn reduce_in_parts(ing: &Ingested) -> Vec<Derived> {
    reduce_parts(ing, rayon::current_num_threads() * REDUCE_PARTS_PER_THREAD)
}

/// The intervals of an ingest reduced in parts.
fn intervals(parts: &[Derived]) -> u64 {
    parts.iter().map(|p| p.intervals.len() as u64).sum()
}

/// The tables written per agent besides `events` (which is built while it is written).
fn per_agent_tables() -> Vec<Table> {
    TABLES
        .iter()
        .copied()
        .filter(|t| !SHARED_TABLES.contains(t) && *t != Table::Events)
        .collect()
}

/// The tables that are not per agent, written once per ingest: empty for a shard that
/// does not own them.
fn shared_batches(
    ing: &Ingested,
    shard: Option<Shard>,
) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
    let mut b = store::some_batches(ing, &Derived::default(), SHARED_TABLES)?;
    if shard.is_some_and(|s| !s.owns_shared_tables()) {
        b.values_mut().for_each(Vec::clear);
    }
    Ok(b)
}

/// Writes every table of an in-memory ingest, reducing while `events` (which needs only
/// the ingested events) is written, so that reducing and writing share the cores. `derive`
/// returns the derived tables and the summary. Nothing is committed.
fn write_tables<D: std::borrow::Borrow<[Derived]> + Send, T: Send>(
    dir: &Path,
    id: &str,
    ing: &Ingested,
    shard: Option<Shard>,
    derive: impl FnOnce() -> Result<(D, T)> + Send,
) -> Result<(Files, D, T)> {
    let per_agent = per_agent_tables();
    let (events, rest) = rayon::join(
        || store::write_events_parts(dir, id, ing, Some(store::EVENTS_PARTS_PER_THREAD)),
        || -> Result<_> {
            let (d, summary) = derive()?;
            let mut batches = store::some_batches_of(ing, d.borrow(), &per_agent)?;
            batches.extend(shared_batches(ing, shard)?);
            let files = store::write_parts(dir, id, &batches)?;
            Ok((files, d, summary))
        },
    );
    let (mut files, d, summary) = rest?;
    files.insert(Table::Events.to_string(), events?);
    Ok((files, d, summary))
}

/// Writes an ingest already read and reduced as a full commit (`runlog bench` times the
/// write stage this way).
pub fn write_reduced(
    warehouse: &Path,
    ing: &Ingested,
    d: &Derived,
    summary: serde_json::Value,
) -> Result<Manifest> {
    let staged = begin(warehouse, None)?;
    let id = staged.id().to_string();
    let (files, _, ()) = write_tables(staged.dir(), &id, ing, None, || {
        Ok((std::slice::from_ref(d), ()))
    })?;
    commit::commit_full(staged, files, summary, BTreeMap::new(), GcPolicy::default())
}

/// Writes tables already built as record batches as a full commit (tests and benchmarks
/// that make a warehouse from a [`crate::loaded::Loaded`]).
pub fn write_batches(
    warehouse: &Path,
    tables: &BTreeMap<Table, Vec<RecordBatch>>,
    summary: serde_json::Value,
) -> Result<Manifest> {
    let staged = begin(warehouse, None)?;
    let id = staged.id().to_string();
    let files = store::write_parts(staged.dir(), &id, tables)?;
    commit::commit_full(staged, files, summary, BTreeMap::new(), GcPolicy::default())
}
