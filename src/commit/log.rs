//! The warehouse's version log: how a commit is published on any object store, and how
//! old files are collected.
//!
//! - **Versions.** Each commit is one object `_log/<N>.json` (N zero-padded to 20 digits,
//!   so names sort as numbers) holding a whole [`Manifest`]. It is written with
//!   put-if-absent (`PutMode::Create`): of two writers that both read version N, one
//!   creates N+1 and the other is refused with `AlreadyExists`. The loser re-reads the new
//!   latest version and *rebases*: its commit is a function of the version it builds on
//!   (a full ingest replaces whatever is there; a shard replaces its own entry and keeps
//!   the others; a shard beside a full ingest is refused), run again on the new latest
//!   version, then tried again. Readers list `_log/` and read the highest N.
//! - **Before the first write** of a commit, the store is probed: a second put-if-absent
//!   of the same key must be refused. A store that silently overwrites (some S3 look-alikes
//!   ignore `If-None-Match`) would let two writers both "win": it is refused with a clear
//!   message instead.
//! - **Migration.** A warehouse written before the log has only `_manifest.json`: it is
//!   read as version 0, and the first commit writes version 1.
//! - **Garbage collection** ([`collect`]) deletes a data file only when no version among
//!   the last K names it *and* it is older than the retention period ([`GcPolicy`]:
//!   `--keep-versions`, `--retention`). A query that registered an older version's files
//!   keeps reading them while they are kept (DataFusion lists a missing file as a prefix,
//!   silently reading fewer rows), and a writer's files, not yet named by any version, are
//!   not taken from under it. The files of the version an open append round plans on
//!   ([`super::AppendRound`]) are kept too, whatever the window. The `_log/` entries
//!   themselves are never deleted: they are small, and deleting one would let a writer
//!   holding a stale view re-create it.

use std::collections::HashSet;
use std::time::Duration;

use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::{Manifest, MANIFEST, MANIFEST_FORMAT};
use crate::error::Result;
use crate::objstore::Root;
use crate::store::TABLES;

/// The folder of the version log.
pub const LOG_DIR: &str = "_log";
/// How many times a commit rebases on a newer version before it gives up.
const MAX_ATTEMPTS: usize = 1000;

/// The name of version `n` in the warehouse (version 0 is a legacy `_manifest.json`).
pub fn version_name(n: u64) -> String {
    if n == 0 {
        MANIFEST.to_string()
    } else {
        format!("{LOG_DIR}/{n:020}.json")
    }
}

/// What garbage collection keeps: every file named by one of the last `keep_versions`
/// versions, and every file younger than `retention`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcPolicy {
    pub keep_versions: usize,
    pub retention: Duration,
}

impl Default for GcPolicy {
    /// Ten versions, one hour: longer than a query runs, and than an ingest takes to write
    /// its files before it commits.
    fn default() -> Self {
        GcPolicy {
            keep_versions: 10,
            retention: Duration::from_secs(3600),
        }
    }
}

/// Parses a duration written `90s`, `30m`, `1h`, `2d` (or bare seconds).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a duration like 90s, 30m, 1h or 2d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("{s:?}: the unit is one of s, m, h, d")),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

fn parse_version(name: &str) -> Option<u64> {
    let n: u64 = name.strip_suffix(".json")?.parse().ok()?;
    (n > 0).then_some(n)
}

/// Every version in the warehouse, in order (0 for a legacy `_manifest.json`).
pub async fn versions(root: &Root) -> Result<Vec<u64>> {
    let dir = root.path(LOG_DIR);
    let listed: Vec<_> = root
        .store
        .list(Some(&dir))
        .try_collect()
        .await
        .map_err(|e| root.store_error(LOG_DIR, e))?;
    let mut v: Vec<u64> = listed
        .iter()
        .filter_map(|m| parse_version(m.location.filename()?))
        .collect();
    v.sort_unstable();
    if v.is_empty() || v[0] > 0 {
        match root.store.head(&root.path(MANIFEST)).await {
            Ok(_) => v.insert(0, 0),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(root.store_error(MANIFEST, e)),
        }
    }
    Ok(v)
}

/// Reads version `n`.
pub async fn read_version(root: &Root, n: u64) -> Result<Manifest> {
    let name = version_name(n);
    let bytes = root
        .store
        .get(&root.path(&name))
        .await
        .map_err(|e| root.store_error(&name, e))?
        .bytes()
        .await
        .map_err(|e| root.store_error(&name, e))?;
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| root.error(format!("unreadable {name}: {e}")))?;
    if m.format != MANIFEST_FORMAT {
        return Err(root.error(format!("unknown warehouse format {:?}", m.format)));
    }
    Ok(m)
}

/// The latest version and its manifest, or `None` for an empty warehouse.
pub async fn latest(root: &Root) -> Result<Option<(u64, Manifest)>> {
    match versions(root).await?.last() {
        Some(&n) => Ok(Some((n, read_version(root, n).await?))),
        None => Ok(None),
    }
}

/// Refuses a store whose put-if-absent does not refuse an object that is there.
pub async fn probe_put_if_absent(root: &Root, id: &str) -> Result<()> {
    let name = format!("{LOG_DIR}/_probe-{id}");
    let p = root.path(&name);
    let create = || PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    root.store
        .put_opts(&p, PutPayload::from_static(b"1"), create())
        .await
        .map_err(|e| root.store_error(&name, e))?;
    let second = root
        .store
        .put_opts(&p, PutPayload::from_static(b"2"), create())
        .await;
    let _ = root.store.delete(&p).await;
    match second {
        Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(root.store_error(&name, e)),
        Ok(_) => Err(root.error(
            "its store does not refuse a second put-if-absent of the same object (it ignores \
             If-None-Match), so two writers could both commit and one would be lost; nothing \
             was committed. Use a store with conditional writes (AWS S3, MinIO, moto, a local \
             folder)",
        )),
    }
}

/// What [`commit`] published.
#[derive(Debug)]
pub struct Committed {
    pub version: u64,
    pub manifest: Manifest,
    /// Versions that won a race against this commit, and that it rebased on.
    pub rebased: usize,
}

/// Publishes a new version: `build` makes the manifest from the latest version (`None` in
/// an empty warehouse), `own` are the files this commit brings (checked to be there), then
/// the version is created with put-if-absent, rebuilt on the winner's version and retried
/// when another writer got there first.
pub async fn commit(
    root: &Root,
    id: &str,
    own: &[String],
    mut build: impl FnMut(Option<&Manifest>) -> Result<Manifest> + Send,
) -> Result<Committed> {
    probe_put_if_absent(root, id).await?;
    check_present(root, own).await?;
    for rebased in 0..MAX_ATTEMPTS {
        let current = latest(root).await?;
        let manifest = build(current.as_ref().map(|(_, m)| m))?;
        let version = current.as_ref().map_or(1, |(n, _)| n + 1);
        let name = version_name(version);
        let body = serde_json::to_vec_pretty(&manifest)?;
        let put = root
            .store
            .put_opts(
                &root.path(&name),
                PutPayload::from(body),
                PutOptions {
                    mode: PutMode::Create,
                    ..Default::default()
                },
            )
            .await;
        match put {
            Ok(_) => {
                return Ok(Committed {
                    version,
                    manifest,
                    rebased,
                })
            }
            Err(object_store::Error::AlreadyExists { .. }) => continue,
            Err(e) => return Err(root.store_error(&name, e)),
        }
    }
    Err(root.error(format!(
        "{MAX_ATTEMPTS} other commits won the race against this one; nothing was committed: \
         run it again"
    )))
}

/// Fails when one of `files` is not in the store (a garbage collection with a retention
/// shorter than this write took removed it): nothing is committed then.
async fn check_present(root: &Root, files: &[String]) -> Result<()> {
    for rel in files {
        match root.store.head(&root.path(rel)).await {
            Ok(_) => {}
            Err(object_store::Error::NotFound { .. }) => {
                return Err(root.error(format!(
                    "{rel} vanished before this ingest committed (a garbage collection with a \
                     --retention shorter than the ingest ran meanwhile?); nothing was \
                     committed: run it again"
                )))
            }
            Err(e) => return Err(root.store_error(rel, e)),
        }
    }
    Ok(())
}

/// What a garbage collection removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Collected {
    pub files: usize,
    pub bytes: u64,
}

/// Deletes the data files (`TABLE/*.parquet`) that no version among the last
/// `policy.keep_versions` names, that are older than `policy.retention`, and that
/// `removable` allows (by file name); a legacy `_manifest.json` that has left the window,
/// and old probes of killed writers, too. Best effort: a file that cannot be deleted stays for the next one.
pub async fn collect(
    root: &Root,
    policy: GcPolicy,
    removable: impl Fn(&str) -> bool + Send,
) -> Result<Collected> {
    let all = versions(root).await?;
    let window = &all[all.len().saturating_sub(policy.keep_versions.max(1))..];
    let mut keep: HashSet<String> = HashSet::new();
    // The versions an open append round plans on: its shards still read them.
    let mut pinned: Vec<u64> = Vec::new();
    for &n in window {
        let m = read_version(root, n).await?;
        pinned.extend(m.round.as_ref().and_then(|r| r.base));
        keep.extend(m.tables.into_values().flatten());
    }
    pinned.retain(|n| !window.contains(n));
    pinned.dedup();
    for &n in &pinned {
        keep.extend(read_version(root, n).await?.tables.into_values().flatten());
    }
    let now = chrono::Utc::now();
    let old_enough = |t: chrono::DateTime<chrono::Utc>| {
        (now - t).to_std().unwrap_or_default() >= policy.retention
    };
    let mut out = Collected::default();
    for &table in TABLES {
        let listed: Vec<_> = match root
            .store
            .list(Some(&root.path(table.name())))
            .try_collect()
            .await
        {
            Ok(l) => l,
            Err(_) => continue,
        };
        for meta in listed {
            let Some(rel) = root.relative(&meta.location) else {
                continue;
            };
            let name = meta.location.filename().unwrap_or_default();
            if name.ends_with(".parquet")
                && !keep.contains(&rel)
                && removable(name)
                && old_enough(meta.last_modified)
                && root.store.delete(&meta.location).await.is_ok()
            {
                out.files += 1;
                out.bytes += meta.size;
            }
        }
    }
    // Probes left by writers killed between their two puts.
    if let Ok(listed) = root
        .store
        .list(Some(&root.path(LOG_DIR)))
        .try_collect::<Vec<_>>()
        .await
    {
        for meta in listed {
            let probe = meta
                .location
                .filename()
                .is_some_and(|n| n.starts_with("_probe-"));
            // A minute at least: another writer may be between its two puts.
            let age = (now - meta.last_modified).to_std().unwrap_or_default();
            if probe && age >= policy.retention.max(Duration::from_secs(60)) {
                let _ = root.store.delete(&meta.location).await;
            }
        }
    }
    if all.first() == Some(&0) && !window.contains(&0) && !pinned.contains(&0) {
        if let Ok(meta) = root.store.head(&root.path(MANIFEST)).await {
            if old_enough(meta.last_modified) {
                let _ = root.store.delete(&meta.location).await;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_version_names() {
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172800)));
        assert!(parse_duration("1w").is_err());
        assert!(parse_duration("h").is_err());
        assert_eq!(version_name(0), "_manifest.json");
        assert_eq!(version_name(12), "_log/00000000000000000012.json");
        assert_eq!(parse_version("00000000000000000012.json"), Some(12));
        assert_eq!(parse_version("_probe-1.json"), None);
        assert_eq!(parse_version("00000000000000000000.json"), None);
    }
}
