//! The commit protocol: how an ingest's files become the warehouse, in one place.
//!
//! A warehouse is a folder (local, or in an object store: [`crate::objstore`]) with one
//! sub-folder per table holding Parquet files and a log of versions (`_log/<N>.json`, each
//! a whole [`Manifest`] naming the committed files, [`log`]); readers read only what the
//! latest version names. An ingest (any mode: in memory, spilled, sharded):
//!
//! 1. opens a [`Staged`] write: every file it writes is named `TABLE/part-ID-...` with its
//!    own unique `ID`, its spill partitions live in `_spill-ID/`, and every folder it had to
//!    create is remembered. A warehouse in a remote store is staged in a local scratch
//!    folder and uploaded before the commit;
//! 2. writes its Parquet files (`crate::store`);
//! 3. commits: creates the next version with put-if-absent (the one atomic step; a writer
//!    that loses the race rebases and retries, [`log::commit`]), then removes what the last
//!    versions no longer name and the retention period allows ([`log::collect`]), and the
//!    `_spill-*` folders that ingests killed earlier left behind.
//!
//! Until the commit nothing a reader sees has changed. A [`Staged`] write that is dropped
//! without committing (an error, a refusal by `--max-rejects`) removes every file and folder
//! it wrote or created, so the warehouse is left exactly as it was. A killed ingest leaves
//! only unnamed files, collected by a later commit once older than the retention period.
//! Shards commit by replacing their own entry in the manifest ([`shards`]).
//!
//! The local warehouse lock ([`lock`]) is no longer what makes commits correct (the
//! put-if-absent of the version is): it is kept on local warehouses so that a second full
//! ingest into the same folder fails at once instead of doing all its work to replace the
//! first one's, and its owner records tell live spill folders from dead ones. Remote
//! warehouses have no lock.

pub mod index;
pub mod lock;
pub mod log;
pub mod shards;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::objstore::{block_on, Root};
use crate::store::TABLES;
use lock::Owner;
pub use lock::WarehouseLock;
pub use log::GcPolicy;
pub use runlog_core::fingerprint::Fingerprint;
use runlog_core::table::Table;

/// The warehouse's commit record: which files make up each table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: String,
    pub ingest_id: String,
    pub created_at: String,
    /// Table name → files relative to the warehouse folder.
    pub tables: BTreeMap<String, Vec<String>>,
    /// The ingest's accounting.
    pub summary: serde_json::Value,
    /// The shards whose files make up `tables`, when written by `ingest --shard I/N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<shards::Sharding>,
    /// The fingerprint index: every input file read into the warehouse, by its name in the
    /// `file` columns (what `ingest --append` skips, resumes or re-reads). Empty in
    /// warehouses written before it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, Fingerprint>,
    /// B, the count of hash-of-root buckets the per-agent tables are stored in (`0`: not
    /// bucketed). An agent's bucket is `root_hash(root) % B`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub buckets: u32,
    /// Per-agent table -> bucket -> its files (each also in `tables`, which readers read).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bucket_files: BTreeMap<String, BTreeMap<u32, Vec<String>>>,
    /// Bucket -> [agents, intervals] in it (for the summary of an append).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bucket_counts: BTreeMap<u32, [u64; 2]>,
    /// An open round of `ingest --append --shard I/N` (`None`: no round is open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<AppendRound>,
}

impl Manifest {
    /// The files of `table` in this version (none when it has no such table).
    pub fn files(&self, table: Table) -> &[String] {
        self.tables.get(table.name()).map_or(&[], Vec::as_slice)
    }
}

/// An append shared by N shards (`ingest --append PATHS --shard I/N`), open until all N
/// have landed. Every shard plans on the version `base` (so that one landing first does
/// not make the inputs look old to the others), does the buckets `b % N == I`, and shard 0
/// also the shared tables and the new fingerprint index; `inputs` stays the base's index
/// until the last shard lands, and then becomes `next`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AppendRound {
    /// N.
    pub count: u32,
    /// A fingerprint of the round's inputs (names and content hashes): its shards read the
    /// same files.
    pub inputs: String,
    /// The version the round's shards plan on (`None`: the warehouse was missing).
    pub base: Option<u64>,
    /// The shards that have landed.
    pub landed: std::collections::BTreeSet<u32>,
    /// The fingerprint index after the round (written by shard 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<BTreeMap<String, Fingerprint>>,
}

impl AppendRound {
    /// The shards that have not landed yet.
    pub fn missing(&self) -> Vec<u32> {
        (0..self.count)
            .filter(|i| !self.landed.contains(i))
            .collect()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The manifest of a warehouse written before the version log (read as version 0).
pub const MANIFEST: &str = "_manifest.json";
pub const MANIFEST_FORMAT: &str = "runlog-warehouse-v1";
/// The owner file of a spill folder (see [`Staged::spill_dir`]).
const SPILL_OWNER: &str = "_owner.json";
/// How long a spill folder's owner is trusted to be alive when it cannot be checked (another
/// host): longer than any ingest runs.
const SPILL_TTL: Duration = Duration::from_secs(24 * 3600);

/// Reads a warehouse's latest version (a local path, a `file://` URL or `s3://...`).
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    read_latest(&Root::open(dir)?)
}

/// The latest version of the warehouse at `root`; an empty warehouse is an error.
pub fn read_latest(root: &Root) -> Result<Manifest> {
    current(root)?.ok_or_else(|| {
        root.error(format!(
            "not a runlog warehouse (no {} or {MANIFEST}); create one with `runlog ingest LOGS \
             --warehouse {}`",
            log::LOG_DIR,
            root.shown().display()
        ))
    })
}

/// Whether a local folder holds a warehouse (a version log, or the manifest of the
/// warehouses written before it), without reading it.
pub fn is_warehouse(dir: &Path) -> bool {
    dir.join(log::LOG_DIR).is_dir() || dir.join(MANIFEST).is_file()
}

/// The warehouse's latest manifest, or `None` when there is none yet.
pub fn current_manifest(dir: &Path) -> Result<Option<Manifest>> {
    current(&Root::open(dir)?)
}

/// The latest manifest of the warehouse at `root`, or `None` when there is none yet.
pub fn current(root: &Root) -> Result<Option<Manifest>> {
    Ok(block_on(log::latest(root))?.map(|(_, m)| m))
}

/// The committed files of `table`, as the locations DataFusion reads (absolute paths for a
/// local warehouse, URLs for a remote one), each checked to be there and whole: a table the
/// manifest does not name, a file that is missing or cut short, is a clear error rather
/// than a table read with rows missing.
pub fn table_files(dir: &Path, m: &Manifest, table: Table) -> Result<Vec<String>> {
    table_locations(&Root::open(dir)?, m, table)
}

/// [`table_files`] of a warehouse already opened.
pub fn table_locations(root: &Root, m: &Manifest, table: Table) -> Result<Vec<String>> {
    let Some(files) = m.tables.get(table.name()) else {
        return Err(root.error(format!(
            "its manifest names no table {table}: damaged, or not written by runlog; ingest \
             the logs again"
        )));
    };
    files
        .iter()
        .map(|rel| {
            let checked = match &root.local {
                Some(dir) => check_parquet_file(&dir.join(rel)),
                None => block_on(check_parquet_object(root, rel)),
            };
            checked.map_err(|why| {
                root.error(format!(
                    "{rel}, named by its manifest, {why}: damaged; ingest the logs again"
                ))
            })?;
            Ok(root.location_of(rel))
        })
        .collect()
}

/// Whether a committed file is there and looks whole: a Parquet file ends with its footer's
/// length and the magic `PAR1` (a file cut short, or not Parquet, does not).
fn check_parquet_file(path: &Path) -> std::result::Result<(), String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "is missing".to_string(),
        _ => format!("cannot be read ({e})"),
    })?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut tail = [0u8; 8];
    let got = f.seek(SeekFrom::End(-8)).is_ok() && f.read_exact(&mut tail).is_ok();
    parquet_tail_ok(len, got.then_some(&tail))
}

/// [`check_parquet_file`] of an object in a store.
async fn check_parquet_object(root: &Root, rel: &str) -> std::result::Result<(), String> {
    use object_store::ObjectStoreExt;
    let p = root.path(rel);
    let meta = root.store.head(&p).await.map_err(|e| match e {
        object_store::Error::NotFound { .. } => "is missing".to_string(),
        e => format!("cannot be read ({e})"),
    })?;
    let len = meta.size;
    let tail = if len >= 8 {
        root.store.get_range(&p, len - 8..len).await.ok()
    } else {
        None
    };
    let tail: Option<[u8; 8]> = tail.and_then(|b| b.as_ref().try_into().ok());
    parquet_tail_ok(len, tail.as_ref())
}

fn parquet_tail_ok(len: u64, tail: Option<&[u8; 8]>) -> std::result::Result<(), String> {
    let whole = len >= 12
        && tail.is_some_and(|t| {
            &t[4..] == b"PAR1"
                && u64::from(u32::from_le_bytes([t[0], t[1], t[2], t[3]])) + 12 <= len
        });
    if whole {
        Ok(())
    } else {
        Err(format!("is not a whole Parquet file ({len} bytes)"))
    }
}

/// A unique id for one ingest: time and process.
pub fn new_ingest_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{:09}-{}",
        now.as_secs(),
        now.subsec_nanos(),
        std::process::id()
    )
}

/// One ingest's writes into a warehouse, not committed yet. Dropped without
/// [`Staged::committed`], it removes every file it wrote (`TABLE/part-ID*`, `_spill-ID/`,
/// the objects it uploaded to a remote warehouse) and every folder it created, and releases
/// its lock.
pub struct Staged {
    /// The warehouse.
    root: Root,
    /// Where the files are written: the warehouse's own folder, or for a remote warehouse a
    /// local scratch folder whose files [`Staged::upload`] copies to the store.
    dir: PathBuf,
    remote: bool,
    id: String,
    /// Folders this write created, outermost first.
    created: Vec<PathBuf>,
    /// Objects uploaded to a remote warehouse.
    uploaded: Vec<String>,
    lock: Option<WarehouseLock>,
    done: bool,
}

impl Staged {
    /// Starts a write into the warehouse at `loc` under the id `id` (the prefix of every
    /// file it writes), creating a local warehouse and its table folders where missing.
    pub fn begin(loc: &Path, id: String) -> Result<Staged> {
        Staged::begin_at(Root::open(loc)?, id)
    }

    /// [`Staged::begin`] into a warehouse already opened (any store).
    pub fn begin_at(root: Root, id: String) -> Result<Staged> {
        let remote = root.local.is_none();
        let dir = match &root.local {
            None => std::env::temp_dir().join(format!("runlog-stage-{id}")),
            Some(d) => d.clone(),
        };
        let mut s = Staged {
            root,
            dir: dir.clone(),
            remote,
            id,
            created: Vec::new(),
            uploaded: Vec::new(),
            lock: None,
            done: false,
        };
        s.create_dir(&dir)?;
        for t in TABLES {
            s.create_dir(&dir.join(t.name()))?;
        }
        Ok(s)
    }

    /// The id every file of this write is named with.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The local folder the files are written in (relative names as in the manifest).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The warehouse written to.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Takes the warehouse lock of a local warehouse for the rest of this write (`wait`:
    /// how long to wait for another holder; zero fails at once).
    pub fn lock(&mut self, wait: Duration) -> Result<()> {
        if self.lock.is_none() && !self.remote {
            self.lock = Some(if wait.is_zero() {
                WarehouseLock::acquire(&self.dir)?
            } else {
                WarehouseLock::acquire_waiting(&self.dir, wait)?
            });
        }
        Ok(())
    }

    /// The lock this write holds, checked to be still its own.
    fn verify_lock(&self) -> Result<()> {
        match &self.lock {
            Some(l) => l.verify(),
            None if self.remote => Ok(()),
            None => Err(Error::Warehouse {
                path: self.dir.clone(),
                message: "a commit without the warehouse lock".into(),
            }),
        }
    }

    /// A new folder for this write's spill partitions (`_spill-ID/`), with an owner file that
    /// tells a later ingest whether the folder's ingest is still running.
    pub fn spill_dir(&mut self) -> Result<PathBuf> {
        // Built under a temporary name and renamed into place with its owner file inside:
        // a `_spill-ID` folder always says whose it is.
        let d = self.dir.join(format!("_spill-{}", self.id));
        let tmp = self.dir.join(format!("_spill-{}.new", self.id));
        fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut owner = Owner::me();
        owner.expires_at += SPILL_TTL.as_secs();
        let p = tmp.join(SPILL_OWNER);
        fs::write(&p, serde_json::to_vec(&owner)?).map_err(|e| Error::io(&p, e))?;
        fs::rename(&tmp, &d).map_err(|e| Error::io(&d, e))?;
        Ok(d)
    }

    /// Creates `dir` and its missing parents, remembering each it created.
    fn create_dir(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut p = Some(dir);
        while let Some(d) = p {
            if d.as_os_str().is_empty() || d.exists() {
                break;
            }
            missing.push(d.to_path_buf());
            p = d.parent();
        }
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        self.created.extend(missing.into_iter().rev());
        Ok(())
    }

    /// Copies the written files `rels` to a remote warehouse; in a local one, where they were
    /// written in place, syncs them to disk (in parallel: the writers only started their
    /// writeback, see `store::start_writeback`), so that no version names a file a crash
    /// could lose.
    fn upload(&mut self, rels: &[String]) -> Result<()> {
        if !self.remote {
            use rayon::prelude::*;
            return rels.par_iter().try_for_each(|rel| {
                let path = self.dir.join(rel);
                fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| Error::io(&path, e))
            });
        }
        for rel in rels {
            self.uploaded.push(rel.clone());
            block_on(upload_file(&self.root, &self.dir.join(rel), rel))?;
        }
        Ok(())
    }

    /// After the commit: collects garbage (best effort: what fails now is collected by a
    /// later commit) and marks the write committed.
    fn finish(self, gc: GcPolicy, removable: impl Fn(&str) -> bool + Send) {
        let _ = block_on(log::collect(&self.root, gc, removable));
        if !self.remote {
            collect_leftovers(&self.dir);
        }
        self.committed();
    }

    /// Marks the write committed: its files stay.
    fn committed(mut self) {
        self.done = true;
        if self.remote {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    fn rollback(&mut self) {
        if self.remote {
            let (root, uploaded) = (&self.root, &self.uploaded);
            block_on(async {
                use object_store::ObjectStoreExt;
                for rel in uploaded {
                    let _ = root.store.delete(&root.path(rel)).await;
                }
            });
            let _ = fs::remove_dir_all(&self.dir);
            return;
        }
        let prefix = format!("part-{}", self.id);
        for t in TABLES {
            if let Ok(rd) = fs::read_dir(self.dir.join(t.name())) {
                for e in rd.flatten() {
                    if e.file_name().to_string_lossy().starts_with(&prefix) {
                        let _ = fs::remove_file(e.path());
                    }
                }
            }
        }
        let _ = fs::remove_dir_all(self.dir.join(format!("_spill-{}", self.id)));
        let _ = fs::remove_dir_all(self.dir.join(format!("_spill-{}.new", self.id)));
        self.lock = None; // released before its folder may go
        for d in self.created.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            self.rollback();
        } else {
            self.lock = None;
        }
    }
}

/// Uploads one local file to `rel` in the warehouse's store (in parts when it is large).
async fn upload_file(root: &Root, local: &Path, rel: &str) -> Result<()> {
    use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
    const PART: usize = 16 << 20;
    let bytes = fs::read(local).map_err(|e| Error::io(local, e))?;
    let p = root.path(rel);
    if bytes.len() <= PART {
        root.store
            .put(&p, PutPayload::from(bytes))
            .await
            .map_err(|e| root.store_error(rel, e))?;
        return Ok(());
    }
    let upload = root
        .store
        .put_multipart(&p)
        .await
        .map_err(|e| root.store_error(rel, e))?;
    let mut w = WriteMultipart::new_with_chunk_size(upload, PART);
    for chunk in bytes.chunks(PART) {
        w.write(chunk);
    }
    w.finish().await.map_err(|e| root.store_error(rel, e))?;
    Ok(())
}

/// Every table has an entry (empty when the ingest wrote none of its files).
fn with_every_table(mut tables: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    for t in TABLES {
        tables.entry(t.to_string()).or_default();
    }
    tables
}

/// Commits a full ingest's files (its `tables`, relative to the warehouse), replacing
/// everything the warehouse held: creates the next version (a full replace rebases on a
/// version that won the race by replacing it too), then collects what `gc` allows.
pub fn commit_full(
    mut staged: Staged,
    tables: BTreeMap<String, Vec<String>>,
    summary: serde_json::Value,
    inputs: BTreeMap<String, Fingerprint>,
    gc: GcPolicy,
) -> Result<Manifest> {
    staged.lock(Duration::ZERO)?;
    let manifest = Manifest {
        format: MANIFEST_FORMAT.into(),
        ingest_id: staged.id.clone(),
        created_at: chrono::Utc::now().to_rfc3339(),
        tables: with_every_table(tables),
        summary,
        shards: None,
        inputs,
        buckets: 0,
        bucket_files: BTreeMap::new(),
        bucket_counts: BTreeMap::new(),
        round: None,
    };
    staged.verify_lock()?;
    let own: Vec<String> = manifest.tables.values().flatten().cloned().collect();
    staged.upload(&own)?;
    let committed = block_on(log::commit(&staged.root, &staged.id, &own, |_| {
        Ok(manifest.clone())
    }))?;
    // The new version is published: what the last versions do not name is garbage once old.
    staged.finish(gc, |_| true);
    Ok(committed.manifest)
}

/// Commits `own` files (relative to the warehouse) with a manifest that `build` makes from
/// the latest version, called again on a newer version when another writer won the race
/// (`ingest --append`: its build refuses a version it did not plan on, see
/// `crate::append`). On a local warehouse the lock is taken (waiting while another writer
/// commits) for the commit.
pub fn commit_with(
    mut staged: Staged,
    own: &[String],
    build: impl FnMut(Option<&Manifest>) -> Result<Manifest> + Send,
    gc: GcPolicy,
) -> Result<Manifest> {
    staged.lock(shards::LOCK_WAIT)?;
    staged.verify_lock()?;
    staged.upload(own)?;
    let committed = block_on(log::commit(&staged.root, &staged.id, own, build))?;
    staged.finish(gc, |_| true);
    Ok(committed.manifest)
}

/// After a commit into a local warehouse: removes temporary manifests and lock files left
/// by killed processes, and the spill folders of ingests that are gone.
fn collect_leftovers(dir: &Path) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let p = e.path();
        let old = || {
            fs::metadata(&p)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|a| a > lock::TTL)
        };
        // Temporary manifests were written by releases before the version log; a lock's
        // temporary file is a contender's for a moment only.
        let dead_manifest = name.starts_with("_manifest-") && old();
        let dead_lock_tmp = name.starts_with("_lock") && old();
        if name.ends_with(".tmp") && (dead_manifest || dead_lock_tmp) {
            let _ = fs::remove_file(&p);
        } else if name.starts_with("_spill-") && p.is_dir() {
            // A folder still being set up (`.new`) is renamed within microseconds.
            let owner = Owner::read(&p.join(SPILL_OWNER));
            let gone = match owner {
                Some(o) if !name.ends_with(".new") => o.is_stale(),
                _ => old(),
            };
            if gone {
                let _ = fs::remove_dir_all(&p);
            }
        }
    }
}
