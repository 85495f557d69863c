//! The incremental plan of `ingest --append` on a bucketed warehouse: the new and grown
//! files' new lines are read (nothing else), each touched bucket is appended
//! ([`super::bucket`]), and the shared tables (`files`, `rejects`) and the fingerprint index
//! are the old ones plus what this run read and what assembly found. Where the warehouse
//! cannot tell what a full ingest would write, it says why ([`Plan::Full`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rayon::prelude::*;

use super::bucket::{BucketOut, Buckets};
use super::{bucket_of, Appended, Input, Plan, Run, Target, Work};
use crate::commit::{self, Manifest, Staged};
use crate::error::Result;
use crate::store::{self, read};
use runlog_core::fingerprint::{Change, Fingerprint};
use runlog_core::import::Format;
use runlog_core::ingest::{self, FileSummary, Ingested, Reject, Resume};
use runlog_core::table::Table;
use runlog_core::Event;

/// What this run read of its new, grown and changed files, per input file (as `names`).
struct Reads {
    /// What the reader counted (`None`: not read this run).
    sum: Vec<Option<FileSummary>>,
    /// Lines read this run (blank ones included).
    lines: Vec<u64>,
    rejects: Vec<Reject>,
    /// The new events, by bucket.
    by_bucket: BTreeMap<u32, Vec<Event>>,
}

/// What the touched buckets found and wrote, added up.
struct Found {
    /// Per input file: what assembly found (kept, duplicates, rejects, events).
    acc: Vec<FileSummary>,
    /// Per input file: the warehouse's kept events given to the assembly.
    old_kept: Vec<u64>,
    conflicts: Vec<Reject>,
    /// Conflict reasons naming a kept event a new line won over -> naming the new one.
    moved: HashMap<String, String>,
    /// Per input file: the buckets holding its events.
    file_buckets: Vec<BTreeSet<u32>>,
    bucket_files: BTreeMap<String, BTreeMap<u32, Vec<String>>>,
    bucket_counts: BTreeMap<u32, [u64; 2]>,
}

impl Run<'_> {
    /// The incremental plan on a bucketed warehouse `m` (see the module documentation).
    pub(super) fn incremental(
        &self,
        m: &Manifest,
        inputs: &[Input],
        a: &mut Appended,
        t: &Target,
    ) -> Result<Plan> {
        let old_rows = read::read_files_table(self.root, m.files(Table::Files))?;
        let old_rejects = read::read_table(
            self.root,
            m.files(Table::Rejects),
            store::rejects_from_batch,
        )?;
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
        let mut reads = match self.read_new(&to_read, &idx, m.buckets, a)? {
            Ok(r) => r,
            Err(why) => return Ok(Plan::Full(why)),
        };
        let old_row: HashMap<&str, &FileSummary> =
            old_rows.iter().map(|f| (f.file.as_str(), f)).collect();
        let format_of = formats(&names, &reads, &old_row);
        let grown_lines = kept_lines_before(&names, &to_read);
        let mut touched: BTreeSet<u32> = reads.by_bucket.keys().copied().collect();
        for name in &retracted {
            match m.inputs.get(*name) {
                Some(fp) => touched.extend(fp.buckets.iter().copied()),
                None => touched.extend(0..m.buckets),
            }
        }
        let staged = Staged::begin_at(self.root.clone(), commit::new_ingest_id())?;
        let dir = staged.dir().to_path_buf();
        let id = staged.id().to_string();
        let retracted_idx: HashSet<u32> = retracted.iter().map(|n| idx[*n]).collect();
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
            .map(|&b| (b, reads.by_bucket.remove(&b).unwrap_or_default()))
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
        let mut found = match add_up(outs, names.len(), &scope, a) {
            Ok(f) => f,
            Err(why) => return Ok(Plan::Full(why)),
        };
        let work = |found: Found, shared, index| Work {
            shared,
            index,
            scope,
            bucket_files: found.bucket_files,
            bucket_counts: found.bucket_counts,
            buckets: m.buckets,
        };
        let (shared, index) = if t.part.shared() {
            let rows = files_rows(&names, &old_row, &retracted, &reads, &format_of, &found);
            let rejects = self.rejects(
                old_rejects,
                &retracted,
                std::mem::take(&mut reads.rejects),
                &mut found,
                &names,
                inputs,
            )?;
            let index = self.next_index(m, &to_read, &idx, &reads, &format_of, &found, inputs);
            let shared = Ingested {
                files: rows,
                rejects,
                ..Default::default()
            };
            (Some(shared), Some(index))
        } else {
            (None, None)
        };
        let done = self.finish(
            staged,
            Some(m),
            work(found, shared, index),
            std::mem::take(a),
            t,
        )?;
        Ok(match done {
            Some(d) => Plan::Done(Box::new(d)),
            None => Plan::Stale,
        })
    }

    /// Reads the files `to_read` (the new lines of grown ones), numbered by `idx`; `Err`:
    /// why the warehouse cannot take them incrementally (a file of an imported format).
    fn read_new(
        &self,
        to_read: &[&Input],
        idx: &HashMap<&str, u32>,
        b_count: u32,
        a: &mut Appended,
    ) -> Result<std::result::Result<Reads, String>> {
        let resume: Vec<Option<Resume>> = to_read
            .iter()
            .map(|i| match i.change {
                Change::Grown { from, lines } => Some(Resume { from, lines }),
                _ => None,
            })
            .collect();
        let files = to_read
            .iter()
            .map(|i| i.local())
            .collect::<Result<Vec<_>>>()?;
        let numbers: Vec<u32> = to_read.iter().map(|i| idx[i.name.as_str()]).collect();
        let got = ingest::read_files(&files, &numbers, &resume, self.opts)?;
        if let Some(r) = got
            .iter()
            .find(|r| !matches!(r.format, Format::Runlog | Format::Auto))
        {
            return Ok(Err(format!(
                "{} is of an imported format ({}), whose roots and numbers depend on every file",
                r.summary.file,
                r.format.name()
            )));
        }
        let n = idx.len();
        let mut reads = Reads {
            sum: vec![None; n],
            lines: vec![0; n],
            rejects: Vec::new(),
            by_bucket: BTreeMap::new(),
        };
        for (k, mut r) in got.into_iter().enumerate() {
            let f = numbers[k] as usize;
            a.new_lines += r.line_count;
            reads.lines[f] = r.line_count;
            reads.rejects.append(&mut r.rejects);
            for ev in r
                .events
                .drain(..)
                .chain(r.grouped.drain(..).flat_map(|g| g.events))
            {
                reads
                    .by_bucket
                    .entry(bucket_of(&ev.root, b_count))
                    .or_default()
                    .push(ev);
            }
            reads.sum[f] = Some(r.summary);
        }
        Ok(Ok(reads))
    }

    /// The `rejects` table: the old rows (not those of retracted files; conflicts naming a
    /// kept event a new line won over name the new one), this run's line rejects, and the
    /// conflicts assembly found, their excerpts the lines themselves (as a full ingest's).
    fn rejects(
        &self,
        old: Vec<Reject>,
        retracted: &HashSet<&str>,
        mut new: Vec<Reject>,
        found: &mut Found,
        names: &[String],
        inputs: &[Input],
    ) -> Result<Vec<Reject>> {
        let mut with_conflicts = Ingested {
            rejects: std::mem::take(&mut found.conflicts),
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
        let mut rejects: Vec<Reject> = old
            .into_iter()
            .filter(|r| !retracted.contains(r.file.as_str()))
            .map(|mut r| {
                if let Some(now) = found.moved.get(&r.reason) {
                    r.reason = now.clone();
                }
                r
            })
            .collect();
        rejects.append(&mut new);
        rejects.append(&mut with_conflicts.rejects);
        ingest::sort_rejects(&mut rejects, names);
        Ok(rejects)
    }

    /// The fingerprint index after the append: this run's files fingerprinted again, every
    /// file's buckets with those its events went to.
    #[allow(clippy::too_many_arguments)]
    fn next_index(
        &self,
        m: &Manifest,
        to_read: &[&Input],
        idx: &HashMap<&str, u32>,
        reads: &Reads,
        format_of: &[String],
        found: &Found,
        inputs: &[Input],
    ) -> BTreeMap<String, Fingerprint> {
        let mut index = m.inputs.clone();
        for i in to_read {
            let f = idx[i.name.as_str()] as usize;
            let (lines, buckets) = match (i.change, index.get(&i.name)) {
                (Change::Grown { lines, .. }, Some(fp)) => (lines, fp.buckets.clone()),
                _ => (0, BTreeSet::new()),
            };
            let mut fp = Fingerprint::new(&i.scan, lines + reads.lines[f], &format_of[f], &i.rel);
            fp.buckets = buckets;
            index.insert(i.name.clone(), fp);
        }
        for (name, &f) in idx {
            if let Some(fp) = index.get_mut(*name) {
                fp.buckets
                    .extend(found.file_buckets[f as usize].iter().copied());
            }
        }
        self.stamp(&mut index, inputs);
        index
    }
}

/// Each file's format: as this run read it, else as the warehouse recorded it.
fn formats(names: &[String], reads: &Reads, old_row: &HashMap<&str, &FileSummary>) -> Vec<String> {
    names
        .iter()
        .enumerate()
        .map(
            |(f, name)| match (&reads.sum[f], old_row.get(name.as_str())) {
                (Some(r), _) if !r.format.is_empty() => r.format.clone(),
                (_, Some(o)) => o.format.clone(),
                _ => Format::Runlog.name().to_string(),
            },
        )
        .collect()
}

/// Per file: an event of it at a line up to this was in the warehouse before this run
/// (`u64::MAX`: a file not read again; `None`: a file read whole again).
fn kept_lines_before(names: &[String], to_read: &[&Input]) -> Vec<Option<u64>> {
    names
        .iter()
        .map(
            |name| match to_read.iter().find(|i| &i.name == name).map(|i| i.change) {
                None => Some(u64::MAX),
                Some(Change::Grown { lines, .. }) => Some(lines),
                Some(_) => None,
            },
        )
        .collect()
}

/// Adds up the buckets' outcomes (`Err`: a bucket's reason to read everything again); the
/// files and counts of the buckets in `scope` (those this run writes).
fn add_up(
    outs: Vec<std::result::Result<BucketOut, String>>,
    n: usize,
    scope: &BTreeSet<u32>,
    a: &mut Appended,
) -> std::result::Result<Found, String> {
    let mut found = Found {
        acc: vec![FileSummary::default(); n],
        old_kept: vec![0; n],
        conflicts: Vec::new(),
        moved: HashMap::new(),
        file_buckets: vec![BTreeSet::new(); n],
        bucket_files: BTreeMap::new(),
        bucket_counts: BTreeMap::new(),
    };
    for out in outs {
        let out = out?;
        let b = out.b;
        for f in 0..n {
            found.acc[f].kept += out.acc[f].kept;
            found.acc[f].duplicates += out.acc[f].duplicates;
            found.acc[f].rejects += out.acc[f].rejects;
            found.acc[f].events += out.acc[f].events;
            found.old_kept[f] += out.old_kept[f];
        }
        found.conflicts.extend(out.conflicts);
        found.moved.extend(out.moved);
        for f in out.files_here {
            found.file_buckets[f as usize].insert(b);
        }
        if !scope.contains(&b) {
            continue;
        }
        for (table, fs) in out.written {
            if !fs.is_empty() {
                found.bucket_files.entry(table).or_default().insert(b, fs);
            }
        }
        if out.counts[0] > 0 {
            found.bucket_counts.insert(b, out.counts);
        }
        a.buckets_written += 1;
    }
    Ok(found)
}

/// The `files` table: the old rows, what this run read, and what assembly found.
fn files_rows(
    names: &[String],
    old_row: &HashMap<&str, &FileSummary>,
    retracted: &HashSet<&str>,
    reads: &Reads,
    format_of: &[String],
    found: &Found,
) -> Vec<FileSummary> {
    let mut rows = Vec::with_capacity(names.len());
    for (f, name) in names.iter().enumerate() {
        let mut r = match old_row.get(name.as_str()) {
            Some(o) if !retracted.contains(name.as_str()) => (*o).clone(),
            _ => FileSummary {
                file: name.clone(),
                ..Default::default()
            },
        };
        if let Some(s) = &reads.sum[f] {
            r.bytes += s.bytes;
            r.lines += s.lines;
            r.blank += s.blank;
            r.rejects += s.rejects;
        }
        let (acc, old_kept) = (&found.acc[f], found.old_kept[f]);
        r.format = format_of[f].clone();
        r.kept = (r.kept + acc.kept).saturating_sub(old_kept);
        r.events = (r.events + acc.events).saturating_sub(old_kept);
        r.duplicates += acc.duplicates;
        r.rejects += acc.rejects;
        rows.push(r);
    }
    rows
}
