//! The commit protocol: how an ingest's files become the warehouse, in one place.
//!
//! A warehouse is a folder with one sub-folder per table holding Parquet files and a
//! `_manifest.json` naming the committed files; readers read only what the manifest names.
//! An ingest (any mode: in memory, spilled, sharded):
//!
//! 1. opens a [`Staged`] write: every file it writes is named `TABLE/part-ID-...` with its
//!    own unique `ID`, its spill partitions live in `_spill-ID/`, and every folder it had to
//!    create is remembered;
//! 2. writes its Parquet files (`crate::store`);
//! 3. commits: publishes a new manifest by renaming a complete temporary file into place
//!    (the one atomic step), holding the warehouse lock ([`lock`]), then removes what no
//!    manifest names any more ([`collect_garbage`]), including the `_spill-*` folders that
//!    ingests killed earlier left behind.
//!
//! Until the commit nothing a reader sees has changed. A [`Staged`] write that is dropped
//! without committing (an error, a refusal by `--max-rejects`) removes every file and folder
//! it wrote or created, so the warehouse is left exactly as it was. A killed ingest leaves
//! only unnamed files, collected by the next commit. Shards commit by replacing their own
//! entry in the manifest ([`shards`]).

pub mod lock;
pub mod shards;

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::TABLES;
use lock::Owner;
pub use lock::WarehouseLock;

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
}

pub const MANIFEST: &str = "_manifest.json";
pub const MANIFEST_FORMAT: &str = "runlog-warehouse-v1";
/// The owner file of a spill folder (see [`Staged::spill_dir`]).
const SPILL_OWNER: &str = "_owner.json";
/// How long a spill folder's owner is trusted to be alive when it cannot be checked (another
/// host): longer than any ingest runs.
const SPILL_TTL: Duration = Duration::from_secs(24 * 3600);

/// Reads a warehouse's manifest.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let p = dir.join(MANIFEST);
    let text = fs::read_to_string(&p).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::Warehouse {
                path: dir.to_path_buf(),
                message: format!(
                    "not a runlog warehouse (no {MANIFEST}); create one with `runlog ingest LOGS --warehouse {}`",
                    dir.display()
                ),
            }
        } else {
            Error::io(&p, e)
        }
    })?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| Error::Warehouse {
        path: dir.to_path_buf(),
        message: format!("unreadable {MANIFEST}: {e}"),
    })?;
    if m.format != MANIFEST_FORMAT {
        return Err(Error::Warehouse {
            path: dir.to_path_buf(),
            message: format!("unknown warehouse format {:?}", m.format),
        });
    }
    Ok(m)
}

/// The warehouse's manifest, or `None` when there is none yet.
pub fn current_manifest(dir: &Path) -> Result<Option<Manifest>> {
    if !dir.join(MANIFEST).exists() {
        return Ok(None);
    }
    read_manifest(dir).map(Some)
}

/// The committed files of `table`, as absolute paths, each checked to be there and whole:
/// a table the manifest does not name, a file that is missing or cut short, is a clear
/// error rather than a table read with rows missing.
pub fn table_files(dir: &Path, m: &Manifest, table: &str) -> Result<Vec<PathBuf>> {
    let damaged = |message: String| Error::Warehouse {
        path: dir.to_path_buf(),
        message,
    };
    let Some(files) = m.tables.get(table) else {
        return Err(damaged(format!(
            "its manifest names no table {table}: damaged, or not written by runlog; ingest \
             the logs again"
        )));
    };
    let abs = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
    files
        .iter()
        .map(|rel| {
            let p = abs.join(rel);
            check_parquet_file(&p).map_err(|why| {
                damaged(format!(
                    "{rel}, named by its manifest, {why}: damaged; ingest the logs again"
                ))
            })?;
            Ok(p)
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
    let whole = len >= 12
        && f.seek(SeekFrom::End(-8)).is_ok()
        && f.read_exact(&mut tail).is_ok()
        && &tail[4..] == b"PAR1"
        && u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]])) + 12 <= len;
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
/// `_manifest-ID.tmp`) and every folder it created, and releases its lock.
pub struct Staged {
    dir: PathBuf,
    id: String,
    /// Folders this write created, outermost first.
    created: Vec<PathBuf>,
    lock: Option<WarehouseLock>,
    done: bool,
}

impl Staged {
    /// Starts a write into `dir` under the id `id` (the prefix of every file it writes),
    /// creating the warehouse and its table folders where missing.
    pub fn begin(dir: &Path, id: String) -> Result<Staged> {
        let mut s = Staged {
            dir: dir.to_path_buf(),
            id,
            created: Vec::new(),
            lock: None,
            done: false,
        };
        s.create_dir(dir)?;
        for t in TABLES {
            s.create_dir(&dir.join(t))?;
        }
        Ok(s)
    }

    /// The id every file of this write is named with.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the warehouse lock for the rest of this write (`wait`: how long to wait for
    /// another holder; zero fails at once).
    pub fn lock(&mut self, wait: Duration) -> Result<()> {
        if self.lock.is_none() {
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

    /// Marks the write committed: its files stay.
    fn committed(mut self) {
        self.done = true;
    }

    fn rollback(&mut self) {
        let prefix = format!("part-{}", self.id);
        for t in TABLES {
            if let Ok(rd) = fs::read_dir(self.dir.join(t)) {
                for e in rd.flatten() {
                    if e.file_name().to_string_lossy().starts_with(&prefix) {
                        let _ = fs::remove_file(e.path());
                    }
                }
            }
        }
        let _ = fs::remove_dir_all(self.dir.join(format!("_spill-{}", self.id)));
        let _ = fs::remove_dir_all(self.dir.join(format!("_spill-{}.new", self.id)));
        let _ = fs::remove_file(self.dir.join(format!("_manifest-{}.tmp", self.id)));
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

/// Commits a full ingest's files (its `tables`, relative to the warehouse), replacing
/// everything the warehouse held: publishes the manifest under the lock, then removes the
/// files no manifest names any more.
pub fn commit_full(
    mut staged: Staged,
    tables: BTreeMap<String, Vec<String>>,
    summary: serde_json::Value,
) -> Result<Manifest> {
    staged.lock(Duration::ZERO)?;
    let mut tables = tables;
    for t in TABLES {
        tables.entry(t.to_string()).or_default();
    }
    let manifest = Manifest {
        format: MANIFEST_FORMAT.into(),
        ingest_id: staged.id.clone(),
        created_at: chrono::Utc::now().to_rfc3339(),
        tables,
        summary,
        shards: None,
    };
    staged.verify_lock()?;
    publish_manifest(&staged.dir, &manifest)?;
    // The new commit is published: files no manifest names are garbage now.
    collect_garbage(&staged.dir, &manifest, |_| true);
    staged.committed();
    Ok(manifest)
}

/// Publishes a manifest: written to a temporary file, synced, renamed into place (the
/// one atomic step of a commit). The caller holds the warehouse lock.
fn publish_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    let tmp = dir.join(format!("_manifest-{}.tmp", manifest.ingest_id));
    let text = serde_json::to_string_pretty(manifest)?;
    {
        use std::io::Write;
        let mut f = fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    }
    fs::rename(&tmp, dir.join(MANIFEST)).map_err(|e| Error::io(dir.join(MANIFEST), e))?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// After a commit (under the lock): removes the Parquet files that the manifest `m` does not
/// name and `removable` allows (a shard keeps the other shards' files), temporary manifests
/// and lock files left by killed processes, and the spill folders of ingests that are gone.
pub fn collect_garbage(dir: &Path, m: &Manifest, removable: impl Fn(&str) -> bool) {
    let keep: HashSet<PathBuf> = m
        .tables
        .values()
        .flatten()
        .map(|rel| dir.join(rel))
        .collect();
    for &table in TABLES {
        if let Ok(rd) = fs::read_dir(dir.join(table)) {
            for e in rd.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().to_string();
                if name.ends_with(".parquet") && !keep.contains(&p) && removable(&name) {
                    let _ = fs::remove_file(&p);
                }
            }
        }
    }
    let Ok(rd) = fs::read_dir(dir) else { return };
    let own_tmp = format!("_manifest-{}.tmp", m.ingest_id);
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
        // Under the lock nobody else is publishing: another temporary manifest is a dead
        // one's. A lock's temporary file is a contender's for a moment only.
        let dead_manifest = name.starts_with("_manifest-") && name != own_tmp;
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
