//! Sharded commits: `runlog ingest ... --shard I/N` keeps only the agents whose root hashes
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
//!   then (on a local warehouse holding its lock, waiting while another shard commits) reads
//!   the latest version, replaces its own shard's entry, and creates the next version with
//!   put-if-absent ([`super::log::commit`]); when another shard's version won the race it
//!   rebases on it: its entry replaced in that version, the other shards' entries kept.
//!   Only this shard's replaced files are collected afterwards. Shards run in any order, or
//!   at once.
//! - **Mixing**: a warehouse written by a full ingest, or by shards of another `N`, is not
//!   mixed with: the commit is refused with a message naming both, unless `--reshard`
//!   asks to drop everything the warehouse held. A full ingest (no `--shard`) always
//!   replaces everything, shards included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{current_manifest, log, with_every_table, GcPolicy, Manifest, Staged, MANIFEST_FORMAT};
use crate::error::{Error, Result};
use crate::objstore::block_on;
pub use runlog_core::shard::{root_hash, Shard, SHARED_TABLES};

/// How long a shard waits for another shard's commit to release the warehouse lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(600);

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

/// Fails early (before reading any input) when `shard` would be refused by the warehouse.
pub fn precheck(dir: &Path, shard: Shard, reshard: bool) -> Result<()> {
    check_mix(dir, current_manifest(dir)?.as_ref(), shard, reshard)
}

/// Commits one shard's written files (`files`, relative to the warehouse) atomically,
/// replacing only this shard's previous entry (see the module documentation). On a local
/// warehouse, waits for the lock while another shard commits.
pub fn commit_shard(
    mut staged: Staged,
    shard: Shard,
    inputs: String,
    files: BTreeMap<String, Vec<String>>,
    summary: serde_json::Value,
    reshard: bool,
    gc: GcPolicy,
) -> Result<(Manifest, ShardStatus)> {
    let dir = staged.root().shown();
    let id = staged.id().to_string();
    staged.lock(LOCK_WAIT)?;
    // Refused before anything is uploaded when the warehouse will not take this shard.
    check_mix(
        &dir,
        super::current(staged.root())?.as_ref(),
        shard,
        reshard,
    )?;
    let own: Vec<String> = files.values().flatten().cloned().collect();
    staged.verify_lock()?;
    staged.upload(&own)?;
    let mut status = None;
    let committed = block_on(log::commit(staged.root(), &id, &own, |current| {
        let (m, s) = next_manifest(
            &dir, current, shard, &id, &inputs, &files, &summary, reshard,
        )?;
        status = Some(s);
        Ok(m)
    }))?;
    let status =
        status.ok_or_else(|| Error::Invalid("a shard commit without a manifest".into()))?;
    // The other shards of the same N may be writing theirs: those stay.
    staged.finish(
        gc,
        move |name| !matches!(part_shard(name), Some((i, n)) if n == shard.count && i != shard.index),
    );
    Ok((committed.manifest, status))
}

/// The version after `current` with this shard's entry replaced, or a refusal when
/// `current` holds what a shard is not mixed with.
#[allow(clippy::too_many_arguments)]
fn next_manifest(
    dir: &Path,
    current: Option<&Manifest>,
    shard: Shard,
    id: &str,
    inputs: &str,
    files: &BTreeMap<String, Vec<String>>,
    summary: &serde_json::Value,
    reshard: bool,
) -> Result<(Manifest, ShardStatus)> {
    check_mix(dir, current, shard, reshard)?;
    let fresh = || Sharding {
        count: shard.count,
        committed: BTreeMap::new(),
    };
    let (mut sharding, replaced_other) = match current {
        Some(m) => match &m.shards {
            Some(s) if s.count == shard.count => (s.clone(), None),
            _ => (fresh(), Some(describe(m))),
        },
        None => (fresh(), None),
    };
    let created_at = chrono::Utc::now().to_rfc3339();
    sharding.committed.insert(
        shard.index,
        ShardCommit {
            ingest_id: id.to_string(),
            created_at: created_at.clone(),
            inputs: inputs.to_string(),
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
        format: MANIFEST_FORMAT.into(),
        ingest_id: id.to_string(),
        created_at,
        tables: with_every_table(union),
        summary: serde_json::json!({
            "sharded": true,
            "count": shard.count,
            "committed": status.committed,
            "last_commit": shard.to_string(),
        }),
        shards: Some(sharding),
        inputs: BTreeMap::new(),
        buckets: 0,
        bucket_files: BTreeMap::new(),
        bucket_counts: BTreeMap::new(),
        round: None,
    };
    Ok((manifest, status))
}

/// The shard `(I, N)` a part file was written by, from its name (`part-ID-sIofN-K.parquet`).
pub fn part_shard(name: &str) -> Option<(u32, u32)> {
    let stem = name.strip_suffix(".parquet")?;
    let (rest, _k) = stem.rsplit_once('-')?;
    let (_, tag) = rest.rsplit_once("-s")?;
    let (i, n) = tag.split_once("of")?;
    Some((i.parse().ok()?, n.parse().ok()?))
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
