//! Whole agents replaced in a bucketed warehouse, for a writer that knows every event of
//! the agents it touches: `runlog collect` maps a touched agent's spans again from its
//! spool (an imported format's agents cannot be appended to line by line, but they can be
//! made again whole). The writer chooses how many hash-of-root buckets the per-agent
//! tables are stored in. In each touched bucket every per-agent table, `events` included,
//! is kept by [`derived_files`]: the files holding rows of the roots replaced are written
//! again without them, the new rows are a new file, the other files stay; a bucket holding
//! none of the roots replaced (its touched agents are all new) keeps its files unread, counted
//! from the writer's [`RowCounts`]. The shared tables and the fingerprint index are the
//! writer's; the version is committed through the version log ([`Run::finish`]) onto the
//! version planned on, or not at all.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::compute::concat_batches;
use rayon::prelude::*;

use super::derived::{derived_files, RowCounts};
use super::{bucket_of, per_agent_tables, Appended, Part, Run, Target, Work};
use crate::commit::{self, log, GcPolicy, Manifest, Staged};
use crate::error::Result;
use crate::inputs::Downloads;
use crate::objstore::{block_on, Root};
use crate::store::{self, schema::schema};
use runlog_core::fingerprint::Fingerprint;
use runlog_core::ingest::{Agent, FileSummary, IngestOptions, Ingested, Reject};
use runlog_core::reduce_all;
use runlog_core::table::Table;

/// The agents a writer replaces, and the shared tables after it.
#[derive(Debug, Default)]
pub struct Replacement {
    /// Every touched agent with all its events (assembled: in seq order, duplicates gone).
    pub agents: Vec<Agent>,
    /// Roots whose rows go, besides those of `agents` (an agent that took another root).
    pub gone: HashSet<String>,
    /// Of the roots of `gone` and `agents`, those the warehouse may hold rows of, when the
    /// writer knows (`None`: any). A bucket holding none of them keeps its files unread.
    pub held: Option<HashSet<String>>,
    /// The rows of the committed files, kept by the writer from one replacement to the
    /// next (files kept as they are are counted from it, not read).
    pub counts: Arc<RowCounts>,
    /// Every bucket's old files are dropped, not only the touched agents' rows: `agents`
    /// are then every agent of the warehouse.
    pub all: bool,
    /// How many hash-of-root buckets the per-agent tables are stored in (the version
    /// records it; a base version with another count is replaced whole, as with `all`).
    pub buckets: u32,
    /// The `files` and `rejects` tables after the replacement, whole.
    pub files: Vec<FileSummary>,
    pub rejects: Vec<Reject>,
    /// The fingerprint index after the replacement.
    pub index: BTreeMap<String, Fingerprint>,
}

/// A bucket written: its per-agent tables' files, and its agents, intervals and events.
type BucketOut = (u32, BTreeMap<String, Vec<String>>, [u64; 3]);

/// What a replacement committed.
#[derive(Debug)]
pub struct Replaced {
    pub manifest: Manifest,
    /// Rows of `events` in each bucket written (buckets left without events included, 0).
    pub bucket_events: BTreeMap<u32, u64>,
    pub bytes_written: u64,
}

/// Replaces the agents of `r` in the warehouse at `root`, on the version `base` it was
/// planned on (`None`: a new warehouse). Refused when another writer committed since.
pub fn replace_agents(
    root: &Root,
    base: Option<(u64, &Manifest)>,
    r: Replacement,
    gc: GcPolicy,
) -> Result<Replaced> {
    let start = Instant::now();
    let Replacement {
        agents,
        mut gone,
        held,
        counts,
        all,
        buckets,
        files,
        rejects,
        index,
    } = r;
    let buckets = buckets.max(1);
    let old = base
        .map(|(_, m)| m)
        .filter(|m| !all && m.buckets == buckets);
    gone.extend(agents.iter().map(|a| a.root.to_string()));
    let mut by_bucket: BTreeMap<u32, Vec<Agent>> = BTreeMap::new();
    for a in agents {
        by_bucket
            .entry(bucket_of(&a.root, buckets))
            .or_default()
            .push(a);
    }
    let scope: BTreeSet<u32> = if old.is_none() {
        // Every bucket, and those of a base version stored in more.
        let before = base.map_or(0, |(_, m)| m.buckets);
        (0..buckets.max(before)).collect()
    } else {
        gone.iter().map(|g| bucket_of(g, buckets)).collect()
    };
    // The roots whose rows each bucket's files may hold.
    let mut drop_in = by_bucket_of(held.as_ref().unwrap_or(&gone), buckets);
    let staged = Staged::begin_at(root.clone(), commit::new_ingest_id())?;
    let dir = staged.dir().to_path_buf();
    let id = staged.id().to_string();
    let work: Vec<(u32, Vec<Agent>, HashSet<String>)> = scope
        .iter()
        .map(|&b| {
            let agents = by_bucket.remove(&b).unwrap_or_default();
            (b, agents, drop_in.remove(&b).unwrap_or_default())
        })
        .collect();
    let outs: Vec<BucketOut> = work
        .into_par_iter()
        .with_max_len(1)
        .map(|(b, agents, gone)| {
            let ing = Ingested {
                files: files.clone(),
                agents,
                ..Default::default()
            };
            let old_files = |t: Table| -> Vec<String> {
                old.and_then(|m| m.bucket_files.get(t.name()))
                    .and_then(|by_b| by_b.get(&b))
                    .cloned()
                    .unwrap_or_default()
            };
            let derived = reduce_all(&ing);
            let bid = format!("{id}-b{b:03}");
            let mut written = BTreeMap::new();
            let mut rows = BTreeMap::new();
            for t in per_agent_tables() {
                let fresh = if t == Table::Events {
                    concat_batches(&schema(t), &store::events_batches(&ing)?)?
                } else {
                    store::derived_batch(&derived, t)?
                };
                let (fs, n) =
                    derived_files(root, &dir, &bid, t, &old_files(t), &gone, fresh, &counts)?;
                if !fs.is_empty() {
                    written.insert(t.to_string(), fs);
                }
                rows.insert(t, n);
            }
            let counts = [
                rows[&Table::Agents],
                rows[&Table::Intervals],
                rows[&Table::Events],
            ];
            Ok((b, written, counts))
        })
        .collect::<Result<_>>()?;
    let mut bucket_files: BTreeMap<String, BTreeMap<u32, Vec<String>>> = BTreeMap::new();
    let mut bucket_counts = BTreeMap::new();
    let mut bucket_events = BTreeMap::new();
    for (b, written, [agents, intervals, events]) in outs {
        for (t, fs) in written {
            bucket_files.entry(t).or_default().insert(b, fs);
        }
        if agents > 0 {
            bucket_counts.insert(b, [agents, intervals]);
        }
        bucket_events.insert(b, events);
    }
    let downloads = Downloads::with_progress(None);
    let opts = IngestOptions::default();
    let run = Run {
        root,
        sources: &[],
        downloads: &downloads,
        skipped: 0,
        skipped_json: 0,
        opts: &opts,
        gc,
        start,
        shard: None,
    };
    let t = Target {
        part: Part {
            count: 1,
            indices: BTreeSet::from([0]),
        },
        base: base.map(|(n, _)| n),
        key: String::new(),
    };
    let work = Work {
        shared: Some(Ingested {
            files,
            rejects,
            ..Default::default()
        }),
        index: Some(index),
        scope,
        bucket_files,
        bucket_counts,
        buckets,
    };
    let done = run.finish(staged, base.map(|(_, m)| m), work, Appended::default(), &t)?;
    match done {
        Some(Appended {
            manifest: Some(manifest),
            bytes_written,
            ..
        }) => {
            forget_unnamed(&counts, &manifest);
            Ok(Replaced {
                manifest,
                bucket_events,
                bytes_written,
            })
        }
        _ => Err(root.error(
            "another writer committed while the agents were being replaced; nothing was \
             committed"
                .to_string(),
        )),
    }
}

/// `roots` by their bucket (of `buckets`).
fn by_bucket_of(roots: &HashSet<String>, buckets: u32) -> BTreeMap<u32, HashSet<String>> {
    let mut by: BTreeMap<u32, HashSet<String>> = BTreeMap::new();
    for r in roots {
        by.entry(bucket_of(r, buckets))
            .or_default()
            .insert(r.clone());
    }
    by
}

/// Forgets the row counts of files the version `m` does not name (gone or never committed).
fn forget_unnamed(counts: &RowCounts, m: &Manifest) {
    let named: HashSet<&str> = m.tables.values().flatten().map(String::as_str).collect();
    counts.retain(|f| named.contains(f));
}

/// The latest version of the warehouse at `root`, to plan a replacement on.
pub fn latest(root: &Root) -> Result<Option<(u64, Manifest)>> {
    block_on(log::latest(root))
}
