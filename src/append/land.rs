//! The end of every append, incremental or full: the shared tables written (shard 0), an
//! empty file for each table left without rows, and the commit through the version log,
//! which takes the version planned on, or merges into one of the same append round (its
//! shards' buckets are disjoint); any other version makes the append plan again.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use super::{per_agent_tables, Appended, RoundStatus, Run, Target, Work};
use crate::commit::{self, AppendRound, Manifest, Staged, MANIFEST_FORMAT};
use crate::error::{Error, Result};
use crate::store::{self, TABLES};
use runlog_core::reduce::Derived;
use runlog_core::shard::SHARED_TABLES;
use runlog_core::table::Table;

/// Files per table -> their names.
type Files = BTreeMap<String, Vec<String>>;

/// What the next version is made of, whatever version it lands on.
struct Landing<'a> {
    old: Option<&'a Manifest>,
    t: &'a Target,
    id: String,
    scope: BTreeSet<u32>,
    /// Per-agent table -> bucket of `scope` -> this run's files.
    mine: BTreeMap<String, BTreeMap<u32, Vec<String>>>,
    mine_counts: BTreeMap<u32, [u64; 2]>,
    buckets: u32,
    shared_files: Option<Files>,
    empties: BTreeMap<Table, String>,
    /// The accounting of the shared tables (shard 0), as the manifest's summary.
    value: Option<serde_json::Value>,
    index: Option<BTreeMap<String, runlog_core::fingerprint::Fingerprint>>,
}

impl Run<'_> {
    /// Writes the shared tables (shard 0) and commits this append's `work` onto the latest
    /// version, or `None` when that is not the version `old` it planned on (nor a version
    /// of the same round, whose other shards touched other buckets).
    pub(super) fn finish(
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
        let mut value = match &shared {
            Some(sh) => {
                let mut summary = runlog_core::summarize(sh, 0, 0.0);
                summary.skipped_files = self.skipped;
                summary.skipped_json_files = self.skipped_json;
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
        let mut l = Landing {
            old,
            t,
            id: staged.id().to_string(),
            scope,
            mine,
            mine_counts,
            buckets,
            shared_files,
            empties: BTreeMap::new(),
            value,
            index,
        };
        l.empties = l.write_empties(&dir)?;
        let prior: HashSet<&String> = old
            .map(|m| m.tables.values().flatten().collect())
            .unwrap_or_default();
        let own: Vec<String> = l
            .mine
            .values()
            .flat_map(|by_b| by_b.values().flatten())
            .chain(l.shared_files.iter().flat_map(|sf| sf.values().flatten()))
            .chain(l.empties.values())
            .filter(|f| !prior.contains(f))
            .cloned()
            .collect();
        a.bytes_written = own
            .iter()
            .map(|f| std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0))
            .sum();
        let mut stale = false;
        let mut landed: Vec<u32> = Vec::new();
        let committed = commit::commit_with(
            staged,
            &own,
            |current| match l.version(current)? {
                Some((m, now)) => {
                    landed = now;
                    Ok(m)
                }
                None => {
                    stale = true;
                    Err(Error::Invalid("another writer committed first".into()))
                }
            },
            self.gc,
        );
        match committed {
            Ok(m) => {
                a.summary = serde_json::from_value(m.summary.clone()).ok();
                if t.part.count > 1 {
                    a.round = Some(RoundStatus {
                        count: t.part.count,
                        ran: t.part.indices.iter().copied().collect(),
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

impl Landing<'_> {
    /// A table with no rows in any bucket is one empty file (readers need a file):
    /// written for each table that may be empty after this append. A shard of a round
    /// cannot tell (the other shards may empty their buckets): it writes one for every
    /// per-agent table it has no rows of, and names it only if the table is empty.
    fn write_empties(&self, dir: &Path) -> Result<BTreeMap<Table, String>> {
        let mut empties = BTreeMap::new();
        for &table in TABLES {
            let empty = if SHARED_TABLES.contains(&table) {
                match &self.shared_files {
                    Some(sf) => sf.get(table.name()).is_none_or(Vec::is_empty),
                    None => self
                        .old
                        .is_none_or(|m| m.tables.get(table.name()).is_none_or(Vec::is_empty)),
                }
            } else {
                let others = self.t.part.count > 1
                    || self
                        .old
                        .and_then(|m| m.bucket_files.get(table.name()))
                        .is_none_or(|by_b| {
                            by_b.iter()
                                .all(|(b, fs)| self.scope.contains(b) || fs.is_empty())
                        });
                others && self.mine.get(table.name()).is_none_or(BTreeMap::is_empty)
            };
            if empty {
                let rel = format!("{table}/part-{}-empty.parquet", self.id);
                store::write_parquet(&dir.join(&rel), table, &[])?;
                empties.insert(table, rel);
            }
        }
        Ok(empties)
    }

    /// The version this append makes of the latest one, `current`, and the round's landed
    /// shards; `None` when `current` is not the version planned on, nor one of the same
    /// round with none of this run's shards landed (the buckets then merge: the round's
    /// shards' are disjoint).
    fn version(&self, current: Option<&Manifest>) -> Result<Option<(Manifest, Vec<u32>)>> {
        let (t, part) = (self.t, &self.t.part);
        let round = current.and_then(|m| m.round.as_ref());
        let fits = match round {
            None => current == self.old,
            Some(r) => {
                r.count == part.count
                    && r.inputs == t.key
                    && r.base == t.base
                    && r.landed.is_disjoint(&part.indices)
            }
        };
        if !fits {
            return Ok(None);
        }
        let mut bucket_files = current.map(|m| m.bucket_files.clone()).unwrap_or_default();
        let mut bucket_counts = current.map(|m| m.bucket_counts.clone()).unwrap_or_default();
        for table in per_agent_tables() {
            let e = bucket_files.entry(table.to_string()).or_default();
            e.retain(|b, _| !self.scope.contains(b));
            if let Some(by_b) = self.mine.get(table.name()) {
                e.extend(by_b.iter().map(|(b, fs)| (*b, fs.clone())));
            }
        }
        bucket_counts.retain(|b, _| !self.scope.contains(b));
        bucket_counts.extend(self.mine_counts.iter().map(|(b, c)| (*b, *c)));
        let mut tables: Files = BTreeMap::new();
        for &table in TABLES {
            let mut fs: Vec<String> = if SHARED_TABLES.contains(&table) {
                match &self.shared_files {
                    Some(sf) => sf.get(table.name()).cloned().unwrap_or_default(),
                    None => current
                        .and_then(|m| m.tables.get(table.name()))
                        .cloned()
                        .unwrap_or_default(),
                }
            } else {
                bucket_files
                    .get(table.name())
                    .into_iter()
                    .flat_map(|by_b| by_b.values().flatten().cloned())
                    .collect()
            };
            if fs.is_empty() {
                // Not foreseen (a shared table's files never go: shard 0 names one at
                // least): plan again.
                match self.empties.get(&table) {
                    Some(e) => fs.push(e.clone()),
                    None => return Ok(None),
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
        if self.index.is_some() {
            r.next = self.index.clone();
        }
        let landed = r.landed.iter().copied().collect();
        let (round, inputs) = if r.landed.len() as u32 == r.count {
            let next = r.next.take().ok_or_else(|| {
                Error::Invalid("an append round closing without shard 0's index".into())
            })?;
            (None, next)
        } else {
            let base = self.old.map(|m| m.inputs.clone()).unwrap_or_default();
            (Some(r), base)
        };
        // The accounting: shard 0's (the shared tables'), agents and intervals of every
        // bucket.
        let mut summary = self
            .value
            .clone()
            .or_else(|| current.map(|m| m.summary.clone()))
            .unwrap_or_else(|| serde_json::json!({}));
        if let Some(o) = summary.as_object_mut() {
            let sum = |k: usize| bucket_counts.values().map(|c| c[k]).sum::<u64>();
            o.insert("agents".into(), sum(0).into());
            o.insert("intervals".into(), sum(1).into());
        }
        let m = Manifest {
            format: MANIFEST_FORMAT.into(),
            ingest_id: self.id.clone(),
            created_at: chrono::Utc::now().to_rfc3339(),
            tables,
            summary,
            shards: None,
            inputs,
            buckets: self.buckets,
            bucket_files,
            bucket_counts,
            round,
        };
        Ok(Some((m, landed)))
    }
}
