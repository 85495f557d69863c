//! Sharded ingest: `runlog ingest ... --shard I/N` keeps only the agents whose root hashes
//! to shard `I` of `N`, and commits them into a warehouse that other shards of the same
//! `N` write too. The union of the `N` shards is exactly the tables a single-machine ingest
//! of the same input writes.
//!
//! - **Which agents**: shard `I` of `N` keeps the agents whose `root` has
//!   `fnv1a64(root) % N == I` ([`root_hash`]: FNV-1a 64 over the root's UTF-8 bytes — a
//!   fixed function, so every machine and every release agrees). Agents are filtered after
//!   assembly (roots are known there, duplicates resolved) and before the reducer.
//! - **Tables that are not per agent** (`rejects`, `files`) belong to shard 0: it writes them
//!   for the whole input it read (a reject has no agent, or an agent whose events conflict;
//!   the `files` accounting counts every agent). The other shards commit them empty. So
//!   every shard must read the same inputs (under the same names: the `file` columns hold
//!   them); the manifest records a fingerprint of each shard's inputs, and a commit warns
//!   when the shards it sits beside read different ones.
//! - **Commits**: a shard writes its Parquet files under unique names (`part-ID-sIofN-K`),
//!   then, holding the warehouse lock (waiting for it while another shard commits), reads
//!   the current manifest, replaces its own shard's entry, and publishes the new manifest by
//!   one atomic rename. Only the replaced files of this shard are removed afterwards. Shards
//!   run in any order, or at once.
//! - **Mixing**: a warehouse written by a full ingest, or by shards of another `N`, is not
//!   mixed with: the commit is refused with a message naming both, unless `--reshard`
//!   asks to drop everything the warehouse held. A full ingest (no `--shard`) always
//!   replaces everything, shards included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ingest::Ingested;
use crate::store::{self, Manifest};

/// Tables that are not per agent: written by shard 0 only.
pub use runlog_core::shard::{inputs_fingerprint, root_hash, Shard, SHARED_TABLES};

/// How long a shard waits for another shard's commit to release the warehouse lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(600);

/// This shard's tables out of all the tables of its (filtered) ingest: the shared ones
/// are emptied unless this shard owns them.
pub fn shard_tables(
    shard: Shard,
    mut tables: BTreeMap<&'static str, Vec<RecordBatch>>,
) -> BTreeMap<&'static str, Vec<RecordBatch>> {
    if !shard.owns_shared_tables() {
        for t in SHARED_TABLES {
            if let Some(b) = tables.get_mut(t) {
                b.clear();
            }
        }
    }
    tables
}

/// The shards recorded in a warehouse manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sharding {
    /// N: how many shards make the whole.
    pub count: u32,
    /// The committed shards by index.
    pub committed: BTreeMap<u32, ShardCommit>,
}

/// One shard's last commit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShardCommit {
    pub ingest_id: String,
    pub created_at: String,
    /// Fingerprint of the inputs the shard read (names and sizes); shards of one whole
    /// must read the same inputs.
    pub inputs: String,
    /// Table name → this shard's files, relative to the warehouse folder.
    pub tables: BTreeMap<String, Vec<String>>,
    /// The shard's ingest accounting.
    pub summary: serde_json::Value,
}

/// What a shard commit left in the warehouse.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardStatus {
    pub shard: Shard,
    /// Shards of `count` committed so far (this one included).
    pub committed: Vec<u32>,
    /// Whether the committed shards read different inputs.
    pub inputs_differ: bool,
    /// Whether this commit dropped a full ingest or shards of another N (`--reshard`).
    pub replaced_other: Option<String>,
}

impl ShardStatus {
    /// Shards not committed yet.
    pub fn missing(&self) -> Vec<u32> {
        (0..self.shard.count)
            .filter(|i| !self.committed.contains(i))
            .collect()
    }

    /// Lines for the ingest summary.
    pub fn render(&self) -> String {
        let list = |v: &[u32]| {
            v.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut s = String::new();
        if let Some(what) = &self.replaced_other {
            s.push_str(&format!("  --reshard: dropped {what}\n"));
        }
        let missing = self.missing();
        s.push_str(&format!(
            "  shard {} committed; shards of {} in the warehouse: {}{}\n",
            self.shard,
            self.shard.count,
            list(&self.committed),
            if missing.is_empty() {
                " (complete)".to_string()
            } else {
                format!(" (missing {})", list(&missing))
            }
        ));
        if self.inputs_differ {
            s.push_str(
                "  warning: the committed shards read different inputs; the warehouse is one \
                 whole only when every shard reads the same files\n",
            );
        }
        s
    }
}

fn describe(m: &Manifest) -> String {
    match &m.shards {
        None => format!("a full ingest ({})", m.ingest_id),
        Some(s) => format!(
            "shards {} of {}",
            s.committed
                .keys()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(","),
            s.count
        ),
    }
}

/// Whether `shard` may commit beside what the warehouse holds (`None` when it is empty).
fn check_mix(dir: &Path, current: Option<&Manifest>, shard: Shard, reshard: bool) -> Result<()> {
    let Some(m) = current else { return Ok(()) };
    let same = m.shards.as_ref().is_some_and(|s| s.count == shard.count);
    if same || reshard {
        return Ok(());
    }
    Err(Error::Warehouse {
        path: dir.to_path_buf(),
        message: format!(
            "it holds {}; shard {shard} is not mixed with it. Run every shard with the same N, \
             add --reshard to drop what it holds and start shards of {} afresh, or ingest \
             without --shard to replace everything",
            describe(m),
            shard.count
        ),
    })
}

/// The warehouse's manifest, or `None` when there is none yet.
pub fn current_manifest(dir: &Path) -> Result<Option<Manifest>> {
    if !dir.join(store::MANIFEST).exists() {
        return Ok(None);
    }
    store::read_manifest(dir).map(Some)
}

/// Fails early (before reading any input) when `shard` would be refused by the warehouse.
pub fn precheck(dir: &Path, shard: Shard, reshard: bool) -> Result<()> {
    check_mix(dir, current_manifest(dir)?.as_ref(), shard, reshard)
}

/// Takes the warehouse lock, waiting while another ingest holds it (up to `wait`).
pub fn acquire_waiting(dir: &Path, wait: Duration) -> Result<store::WarehouseLock> {
    let start = Instant::now();
    loop {
        match store::WarehouseLock::acquire(dir) {
            Ok(l) => return Ok(l),
            Err(e @ Error::Warehouse { .. }) => {
                if start.elapsed() >= wait {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Writes one shard's tables into the warehouse and commits them atomically, replacing
/// only this shard's previous files (see the module documentation).
pub fn write_shard(
    dir: &Path,
    shard: Shard,
    ing: &Ingested,
    tables: BTreeMap<&'static str, Vec<RecordBatch>>,
    summary: serde_json::Value,
    reshard: bool,
) -> Result<(Manifest, ShardStatus)> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    precheck(dir, shard, reshard)?;
    let tables = shard_tables(shard, tables);
    let id = format!(
        "{}-s{}of{}",
        store::new_ingest_id(),
        shard.index,
        shard.count
    );
    // The parts are written outside the lock (unique names), so shards write in parallel.
    let files = store::write_parts(dir, &id, &tables)?;
    let committed = (|| {
        let _lock = acquire_waiting(dir, LOCK_WAIT)?;
        let current = current_manifest(dir)?;
        check_mix(dir, current.as_ref(), shard, reshard)?;
        // A full ingest's garbage collection may have removed parts written meanwhile.
        for rel in files.values().flatten() {
            if !dir.join(rel).exists() {
                return Err(Error::Warehouse {
                    path: dir.to_path_buf(),
                    message: format!(
                        "{rel} vanished before shard {shard} committed (a full ingest ran \
                         meanwhile?); nothing was committed: run the shard again"
                    ),
                });
            }
        }
        let (mut sharding, replaced_other) = match current.as_ref() {
            Some(m) => match &m.shards {
                Some(s) if s.count == shard.count => (s.clone(), None),
                _ => (
                    Sharding {
                        count: shard.count,
                        committed: BTreeMap::new(),
                    },
                    Some(describe(m)),
                ),
            },
            None => (
                Sharding {
                    count: shard.count,
                    committed: BTreeMap::new(),
                },
                None,
            ),
        };
        let created_at = chrono::Utc::now().to_rfc3339();
        sharding.committed.insert(
            shard.index,
            ShardCommit {
                ingest_id: id.clone(),
                created_at: created_at.clone(),
                inputs: inputs_fingerprint(ing),
                tables: files.clone(),
                summary: summary.clone(),
            },
        );
        // Readers read `tables`: the union of the shards' files, in shard order.
        let mut union: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in sharding.committed.values() {
            for (t, fs) in &c.tables {
                union
                    .entry(t.clone())
                    .or_default()
                    .extend(fs.iter().cloned());
            }
        }
        let inputs: BTreeSet<&str> = sharding
            .committed
            .values()
            .map(|c| c.inputs.as_str())
            .collect();
        let status = ShardStatus {
            shard,
            committed: sharding.committed.keys().copied().collect(),
            inputs_differ: inputs.len() > 1,
            replaced_other,
        };
        let manifest = Manifest {
            format: store::MANIFEST_FORMAT.into(),
            ingest_id: id.clone(),
            created_at,
            tables: union,
            summary: serde_json::json!({
                "sharded": true,
                "count": shard.count,
                "committed": status.committed,
                "last_commit": shard.to_string(),
            }),
            shards: Some(sharding),
        };
        store::publish_manifest(dir, &manifest)?;
        // Still under the lock: no full ingest is writing parts now.
        remove_unnamed(dir, &manifest, shard);
        Ok((manifest, status))
    })();
    match committed {
        Ok(done) => Ok(done),
        Err(e) => {
            for rel in files.values().flatten() {
                let _ = std::fs::remove_file(dir.join(rel));
            }
            Err(e)
        }
    }
}

/// The shard `(I, N)` a part file was written by, from its name (`part-ID-sIofN-K.parquet`).
pub fn part_shard(name: &str) -> Option<(u32, u32)> {
    let stem = name.strip_suffix(".parquet")?;
    let (rest, _k) = stem.rsplit_once('-')?;
    let (_, tag) = rest.rsplit_once("-s")?;
    let (i, n) = tag.split_once("of")?;
    Some((i.parse().ok()?, n.parse().ok()?))
}

/// After a shard commit (under the lock): removes the Parquet files that the manifest no
/// longer names, except those of the other shards of the same N (one may be writing its
/// parts right now). So this shard's replaced or interrupted files go, and so do those of
/// a full ingest or of another N that `--reshard` dropped.
fn remove_unnamed(dir: &Path, m: &Manifest, shard: Shard) {
    let keep: std::collections::HashSet<PathBuf> = m
        .tables
        .values()
        .flatten()
        .map(|rel| dir.join(rel))
        .collect();
    for &table in store::TABLES {
        let Ok(rd) = std::fs::read_dir(dir.join(table)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if !name.ends_with(".parquet") || keep.contains(&p) {
                continue;
            }
            let other_shard_of_n = matches!(part_shard(&name),
                Some((i, n)) if n == shard.count && i != shard.index);
            if !other_shard_of_n {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_carry_their_shard() {
        assert_eq!(
            part_shard("part-1700000000-000000001-42-s2of3-00001.parquet"),
            Some((2, 3))
        );
        assert_eq!(
            part_shard("part-1700000000-000000001-42-00000.parquet"),
            None
        );
    }
}
