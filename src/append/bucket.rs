//! One bucket of an incremental append: its kept events read back, the touched agents (of
//! the new events and of retracted files) assembled again with the new events by the full
//! ingest's own assembly, reduced, and the bucket's files written: the derived tables as
//! [`super::derived`] keeps them, `events` appended to or compacted.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use datafusion::arrow::array::{AsArray, RecordBatch};

use super::derived::{derived_files, RowCounts};
use super::{per_agent_tables, MAX_EVENTS_FILES};
use crate::commit::Manifest;
use crate::error::Result;
use crate::objstore::Root;
use crate::store::{self, read};
use runlog_core::import::Format;
use runlog_core::ingest::{self, FileRead, FileSummary, Ingested, Reject};
use runlog_core::table::Table;
use runlog_core::{reduce_all, Event};

/// Per-agent table -> a bucket's files.
type Written = BTreeMap<String, Vec<String>>;

/// What one bucket's append found and wrote.
pub(super) struct BucketOut {
    pub(super) b: u32,
    /// Per input file: what assembly found in the bucket (kept, duplicates, rejects, events).
    pub(super) acc: Vec<FileSummary>,
    /// Per input file: the kept events of the warehouse given to the assembly.
    pub(super) old_kept: Vec<u64>,
    pub(super) conflicts: Vec<Reject>,
    /// Kept events a new line with the same content won over: the reason of a line that
    /// conflicted with the old one, and that of a line conflicting with the new one.
    pub(super) moved: Vec<(String, String)>,
    /// Input files with events in the bucket.
    pub(super) files_here: BTreeSet<u32>,
    /// Per-agent table -> the bucket's files (none: the table has no rows in it).
    pub(super) written: BTreeMap<String, Vec<String>>,
    /// Agents and intervals in the bucket.
    pub(super) counts: [u64; 2],
}

/// What every bucket of one incremental append shares.
pub(super) struct Buckets<'a> {
    pub(super) root: &'a Root,
    pub(super) m: &'a Manifest,
    pub(super) names: &'a [String],
    pub(super) idx: &'a HashMap<&'a str, u32>,
    pub(super) format_of: &'a [String],
    pub(super) retracted: &'a HashSet<&'a str>,
    pub(super) retracted_idx: &'a HashSet<u32>,
    /// Per input file: lines up to which its events were in the warehouse before.
    pub(super) grown_lines: &'a [Option<u64>],
    pub(super) losers: u64,
    pub(super) dir: &'a Path,
    pub(super) id: &'a str,
}

/// A bucket's events as the warehouse holds them, split by the agents this run touches.
struct Back {
    /// The bucket's `events` files.
    files: Vec<String>,
    /// The roots of the new events and of the retracted files' events.
    touched: HashSet<String>,
    /// The untouched agents' rows, as read.
    untouched: Vec<RecordBatch>,
    /// The touched agents' kept events, the retracted files' dropped.
    kept: Vec<Event>,
    /// How many of the retracted files' events were dropped.
    dropped: usize,
}

impl Buckets<'_> {
    /// Appends the new events `new` of bucket `b` (see the module documentation), or says
    /// why the warehouse cannot tell exactly. Without `write` (another shard's bucket) the
    /// touched agents are assembled for the accounting only: not reduced, nothing written.
    pub(super) fn bucket(
        &self,
        b: u32,
        new: Vec<Event>,
        write: bool,
    ) -> Result<std::result::Result<BucketOut, String>> {
        let back = self.read_back(b, &new)?;
        if let Some(e) = back
            .kept
            .iter()
            .find(|e| self.format_of[e.file as usize] != "runlog")
        {
            return Ok(Err(format!(
                "agent {} has events of an imported format ({}), whose numbers depend on \
                 every file",
                e.root, self.names[e.file as usize]
            )));
        }
        let moved = match self.winners(&new, &back.kept) {
            Ok(m) => m,
            Err(why) => return Ok(Err(why)),
        };
        // The touched agents assembled again, by the full ingest's own assembly.
        let n = self.names.len();
        let old_count = back.kept.len();
        let (mut acc, mut old_kept) = (vec![FileSummary::default(); n], vec![0u64; n]);
        let mut parts: Vec<FileRead> = self
            .names
            .iter()
            .enumerate()
            .map(|(f, name)| {
                let mut r = FileRead {
                    format: Format::Runlog,
                    ..Default::default()
                };
                r.summary.file = name.clone();
                r.summary.format = self.format_of[f].clone();
                r
            })
            .collect();
        let Back {
            files,
            touched,
            untouched,
            kept,
            dropped,
        } = back;
        for e in kept.into_iter().chain(new) {
            if self.is_old(&e) {
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
        let mut out = BucketOut {
            b,
            acc,
            old_kept,
            conflicts,
            moved,
            files_here,
            written: BTreeMap::new(),
            counts: [0, 0],
        };
        if write {
            // `events` is appended to unless a kept event was retracted or lost to a new line.
            let still_old = ing_b
                .agents
                .iter()
                .flat_map(|a| &a.events)
                .filter(|e| self.is_old(e))
                .count();
            let append_only = dropped == 0 && still_old == old_count;
            (out.written, out.counts) =
                self.write(b, &ing_b, &touched, files, untouched, append_only)?;
        }
        Ok(Ok(out))
    }

    /// Whether an event was in the warehouse before this run.
    fn is_old(&self, e: &Event) -> bool {
        self.grown_lines[e.file as usize].is_some_and(|l| e.line <= l)
    }

    /// The bucket's `events` files, read back and split by the agents this run touches
    /// (those of the new events `new` and of the retracted files).
    fn read_back(&self, b: u32, new: &[Event]) -> Result<Back> {
        let files = self.files_of(Table::Events, b);
        let mut batches = Vec::new();
        for rel in &files {
            batches.extend(read::read_parquet(self.root, rel)?);
        }
        let mut touched: HashSet<String> = new.iter().map(|e| e.root.to_string()).collect();
        if !self.retracted_idx.is_empty() {
            for batch in &batches {
                let roots = store::text_column(batch, Table::Events.name(), "root")?;
                let roots = roots.as_string::<i32>();
                for (i, name) in store::events_file_names(batch)?.iter().enumerate() {
                    if self.retracted.contains(name.as_str()) {
                        touched.insert(roots.value(i).to_string());
                    }
                }
            }
        }
        let (touched_batches, untouched) = read::split_by_root(&batches, &touched)?;
        drop(batches);
        let mut kept = Vec::new();
        for batch in &touched_batches {
            kept.extend(events_of(self.root, batch, self.idx)?);
        }
        let before = kept.len();
        kept.retain(|e| !self.retracted_idx.contains(&e.file));
        Ok(Back {
            files,
            touched,
            untouched,
            dropped: before - kept.len(),
            kept,
        })
    }

    /// The kept events a new line wins over (same root and seq, earlier in (file, line)
    /// order), as conflict reasons naming the kept event -> naming the new line. With the
    /// same content, the lines that lost to the kept event lose to the new one alike (their
    /// conflicts name it now) and the kept event is a duplicate. With other content their
    /// fate would change: `Err`, when the warehouse holds such lines, whose events it does
    /// not keep.
    fn winners(
        &self,
        new: &[Event],
        kept: &[Event],
    ) -> std::result::Result<Vec<(String, String)>, String> {
        let mut first: HashMap<(&str, u64), &Event> = HashMap::new();
        for e in new {
            let w = first.entry((e.root.as_str(), e.seq)).or_insert(e);
            if (e.file, e.line) < (w.file, w.line) {
                *w = e;
            }
        }
        let mut moved = Vec::new();
        for e in kept {
            let Some(w) = first.get(&(e.root.as_str(), e.seq)) else {
                continue;
            };
            if (w.file, w.line) > (e.file, e.line) {
                continue;
            }
            let (wn, en) = (&self.names[w.file as usize], &self.names[e.file as usize]);
            if self.losers > 0 && !ingest::same_content(w, e) {
                return Err(format!(
                    "a new line ({wn}:{}) would win over the event kept from {en}:{} with \
                     other content while the warehouse holds duplicate or conflicting lines, \
                     whose events it does not keep",
                    w.line, e.line
                ));
            }
            let (root, seq) = (e.root.as_str(), e.seq);
            moved.push((
                ingest::conflict_reason(en, e.line, root, seq),
                ingest::conflict_reason(wn, w.line, root, seq),
            ));
        }
        Ok(moved)
    }

    /// The files of the per-agent table `table` in bucket `b` before this append.
    fn files_of(&self, table: Table, b: u32) -> Vec<String> {
        self.m
            .bucket_files
            .get(table.name())
            .and_then(|by_b| by_b.get(&b))
            .cloned()
            .unwrap_or_default()
    }

    /// Reduces the bucket's touched agents (`ing_b`, roots `touched`) and writes its
    /// tables: the per-agent tables' files and [agents, intervals]. `events`: only the new
    /// events in a file of their own when `append_only` and the bucket has fewer than
    /// [`MAX_EVENTS_FILES`] files (`events_files`), else the bucket's events in one file
    /// (`untouched` rows copied as batches).
    fn write(
        &self,
        b: u32,
        ing_b: &Ingested,
        touched: &HashSet<String>,
        events_files: Vec<String>,
        untouched: Vec<RecordBatch>,
        append_only: bool,
    ) -> Result<(Written, [u64; 2])> {
        let derived = reduce_all(ing_b);
        // The derived tables: a file holding touched agents' rows is written again without
        // them, the touched agents' rows go into a new file, the other files stay.
        let bid = format!("{}-b{b:03}", self.id);
        let mut written: Written = BTreeMap::new();
        let mut rows: HashMap<Table, u64> = HashMap::new();
        for t in per_agent_tables()
            .into_iter()
            .filter(|t| *t != Table::Events)
        {
            let fresh = store::derived_batch(&derived, t)?;
            let old = self.files_of(t, b);
            let (files, n) = derived_files(
                self.root,
                self.dir,
                &bid,
                t,
                &old,
                touched,
                fresh,
                &RowCounts::default(),
            )?;
            if !files.is_empty() {
                written.insert(t.to_string(), files);
            }
            rows.insert(t, n);
        }
        let counts = [rows[&Table::Agents], rows[&Table::Intervals]];
        if append_only && events_files.len() < MAX_EVENTS_FILES {
            let fresh = Ingested {
                files: ing_b.files.clone(),
                agents: ing_b
                    .agents
                    .iter()
                    .map(|ag| ingest::Agent {
                        root: ag.root.clone(),
                        events: ag
                            .events
                            .iter()
                            .filter(|e| !self.is_old(e))
                            .cloned()
                            .collect(),
                    })
                    .filter(|ag| !ag.events.is_empty())
                    .collect(),
                ..Default::default()
            };
            let mut list = events_files;
            if !fresh.agents.is_empty() {
                list.extend(store::write_events_parts(self.dir, &bid, &fresh, None)?);
            }
            if !list.is_empty() {
                written.insert(Table::Events.to_string(), list);
            }
            return Ok((written, counts));
        }
        let mut all = untouched;
        all.extend(store::events_batches(ing_b)?);
        all.retain(|b| b.num_rows() > 0);
        if !all.is_empty() {
            // The kept rows come in many small batches (one per old batch and run of
            // roots), and parts are cut by batch count: whole batches again, or every
            // compaction made dozens of files per bucket, and each later append compacted
            // once more.
            let tables = BTreeMap::from([(Table::Events, read::rebatch(&all)?)]);
            written.extend(store::write_parts(self.dir, &bid, &tables)?);
        }
        Ok((written, counts))
    }
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
