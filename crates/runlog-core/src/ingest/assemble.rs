//! Assembly: the files' events grouped by agent (`root`), ordered by `seq`, duplicates
//! dropped and conflicts rejected, first in (file path, line) order wins (docs/semantics.md §1);
//! the per-file accounting of what assembly found, and the excerpts of conflicting lines.

use super::imported::{renumber_imported, resolve_imported_roots};
use super::read::{next_line, FileRead, Grouped, LineRead};
use super::{Agent, FileSummary, IngestOptions, Ingested, Input, Reject};
use crate::decode::{excerpt, mask_secrets, EXCERPT_BYTES};
use crate::event::Event;
use crate::import::Format;
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// A conflicting line (§1) is found only after every file is read: its excerpt, like any
/// reject's, is the first bytes of the line itself, so the files holding such lines are
/// read again (conflicts are rare) to fetch them. Where a file cannot be read again, the
/// stand-in excerpt made by [`assemble`] stays.
pub fn excerpt_conflicts(files: &[Input], ing: &mut Ingested, opts: &IngestOptions) {
    let mut wanted: HashMap<&str, Vec<u64>> = HashMap::new();
    for r in &ing.rejects {
        if r.reason.starts_with(CONFLICT_REASON) {
            wanted.entry(r.file.as_str()).or_default().push(r.line);
        }
    }
    if wanted.is_empty() {
        return;
    }
    let mut found: HashMap<(String, u64), String> = HashMap::new();
    for f in files {
        let Some(lines) = wanted.get(f.name.as_str()) else {
            continue;
        };
        if let Ok(ex) = line_excerpts(&f.path, lines, opts.max_line_bytes) {
            found.extend(ex.into_iter().map(|(l, e)| ((f.name.clone(), l), e)));
        }
    }
    for r in &mut ing.rejects {
        if r.reason.starts_with(CONFLICT_REASON) {
            if let Some(e) = found.remove(&(r.file.clone(), r.line)) {
                r.excerpt = e;
            }
        }
    }
}

/// The excerpts of the given lines (1-based) of a file, read as ingest reads it.
fn line_excerpts(path: &Path, lines: &[u64], max: usize) -> io::Result<HashMap<u64, String>> {
    let mut out = HashMap::new();
    for_lines(path, lines, max, |n, l| {
        out.insert(n, excerpt(l));
    })?;
    Ok(out)
}

/// Calls `f` with each of the given lines (1-based) of a file, read as ingest reads it
/// (a byte order mark at the start skipped, a line longer than `max` passed over; a
/// database as its rows).
pub(super) fn for_lines(
    path: &Path,
    lines: &[u64],
    max: usize,
    mut f: impl FnMut(u64, &[u8]),
) -> io::Result<()> {
    let mut raw = BufReader::with_capacity(1 << 16, super::database::open_path(path)?);
    let head = raw.fill_buf()?;
    let mut r: Box<dyn BufRead> = if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(raw)))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(BufReader::new(zstd::stream::read::Decoder::with_buffer(
            raw,
        )?))
    } else {
        Box::new(raw)
    };
    let last = lines.iter().copied().max().unwrap_or(0);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    while line_no < last {
        match next_line(&mut r, &mut buf, max)? {
            LineRead::Eof => break,
            LineRead::TooLong(_) => line_no += 1,
            LineRead::Line => {
                line_no += 1;
                if lines.contains(&line_no) {
                    let mut l: &[u8] = &buf;
                    if line_no == 1 && l.starts_with(b"\xEF\xBB\xBF") {
                        l = &l[3..];
                    }
                    f(line_no, l);
                }
            }
        }
    }
    Ok(())
}

/// Whether two events with the same root and seq have the same content (as JSON values):
/// the later in (file, line) order is then a duplicate of the earlier, else a conflict.
pub fn same_content(a: &Event, b: &Event) -> bool {
    if a.ts != b.ts || a.session != b.session || a.turn != b.turn || a.kind != b.kind {
        return false;
    }
    if a.data == b.data {
        return true;
    }
    match (
        serde_json::from_str::<serde_json::Value>(&a.data),
        serde_json::from_str::<serde_json::Value>(&b.data),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// How the reason of a conflicting line (§1) begins.
pub const CONFLICT_REASON: &str = "conflicts with the event kept from";

/// The reason of a line of `root` and `seq` conflicting with the event kept from
/// `kept_file` at `kept_line` (§1).
pub fn conflict_reason(kept_file: &str, kept_line: u64, root: &str, seq: u64) -> String {
    format!(
        "{CONFLICT_REASON} {kept_file}:{kept_line} (same root {root:?} and seq {seq}, different \
         content)"
    )
}

/// Groups the files' events by root, orders each agent by seq, and resolves duplicates:
/// equal content is one event; different content keeps the first in (file, line) order.
///
/// Imported files (docs/importers/) differ in two ways. A session's root may be named only by
/// its parent's file, so roots are first followed through the sessions that name them. And
/// the sources' counters restart in every file, so an imported root whose events come from
/// several files is ordered by (ts, file, source seq) and numbered again from 0; equal
/// content under one seq is still one event, but different content is no conflict there.
/// An imported file's accounting counts lines: a line is a duplicate when every event it
/// yielded was one, and kept otherwise (also when it was folded into another line's event).
pub fn assemble(reads: Vec<FileRead>) -> Ingested {
    let mut files = Vec::with_capacity(reads.len());
    let mut imported = Vec::with_capacity(reads.len());
    let mut rejects = Vec::new();
    let mut all: Vec<Vec<Event>> = Vec::with_capacity(reads.len());
    let mut grouped: Vec<Grouped> = Vec::new();
    for mut fr in reads {
        if fr.summary.format.is_empty() {
            fr.summary.format = Format::Runlog.name().to_string();
        }
        imported.push(!matches!(fr.format, Format::Runlog | Format::Auto));
        files.push(fr.summary);
        rejects.extend(fr.rejects);
        all.push(fr.events);
        grouped.append(&mut fr.grouped);
    }
    resolve_imported_roots(&mut all, &imported);
    let parts: Vec<Part> = all
        .into_iter()
        .map(Part::Mixed)
        .chain(grouped.into_iter().map(Part::Grouped))
        .collect();
    let names: Vec<String> = files.iter().map(|f| f.file.clone()).collect();
    let mut acc = Accounting::new(files.len());
    let agents = assemble_events(parts, &names, &imported, &mut acc);
    acc.apply(&mut files, &imported);
    rejects.append(&mut acc.conflicts);
    sort_rejects(&mut rejects, &names);
    Ingested {
        files,
        skipped_files: Vec::new(),
        agents,
        rejects,
    }
}

/// Orders rejects by (file in input order, line).
pub fn sort_rejects(rejects: &mut [Reject], names: &[String]) {
    let order: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    rejects.sort_by(|a, b| {
        (order.get(a.file.as_str()), a.line).cmp(&(order.get(b.file.as_str()), b.line))
    });
}

/// What assembly found per input file, added up over any number of [`assemble_events`]
/// calls (one per partition of agents) and then written into the files' summaries.
#[derive(Debug, Default)]
pub struct Accounting {
    kept: Vec<u64>,
    duplicates: Vec<u64>,
    events: Vec<u64>,
    /// Imported files count lines: the lines with a kept event, the lines of duplicates.
    kept_lines: Vec<Vec<u64>>,
    dup_lines: Vec<Vec<u64>>,
    /// Lines rejected because they conflict with a kept event (§1).
    pub conflicts: Vec<Reject>,
}

impl Accounting {
    pub fn new(files: usize) -> Self {
        Accounting {
            kept: vec![0; files],
            duplicates: vec![0; files],
            events: vec![0; files],
            kept_lines: vec![Vec::new(); files],
            dup_lines: vec![Vec::new(); files],
            conflicts: Vec::new(),
        }
    }

    /// Adds another partition's accounting.
    pub fn merge(&mut self, mut other: Accounting) {
        for f in 0..self.kept.len() {
            self.kept[f] += other.kept[f];
            self.duplicates[f] += other.duplicates[f];
            self.events[f] += other.events[f];
            self.kept_lines[f].append(&mut other.kept_lines[f]);
            self.dup_lines[f].append(&mut other.dup_lines[f]);
        }
        self.conflicts.append(&mut other.conflicts);
    }

    /// Writes kept / duplicates / events (and conflict rejects) into the summaries, whose
    /// `lines` and line-level `rejects` the readers already counted.
    pub fn apply(&mut self, files: &mut [FileSummary], imported: &[bool]) {
        for r in &self.conflicts {
            if let Some(f) = files.iter_mut().find(|f| f.file == r.file) {
                f.rejects += 1;
            }
        }
        for (f, summary) in files.iter_mut().enumerate() {
            summary.events = self.events[f];
            if !imported[f] {
                summary.kept = self.kept[f];
                summary.duplicates = self.duplicates[f];
                continue;
            }
            let kept = &mut self.kept_lines[f];
            kept.sort_unstable();
            kept.dedup();
            let dups = &mut self.dup_lines[f];
            dups.sort_unstable();
            dups.dedup();
            dups.retain(|l| kept.binary_search(l).is_err());
            summary.duplicates = dups.len() as u64;
            summary.kept = summary
                .lines
                .saturating_sub(summary.rejects)
                .saturating_sub(summary.duplicates);
        }
    }
}

/// Events handed to [`assemble_events`], as their reader left them.
#[derive(Debug)]
pub enum Part {
    /// Events of any roots, in order (an imported file's).
    Mixed(Vec<Event>),
    /// One root's events (a spill partition's buffer).
    OneRoot(Vec<Event>),
    /// A canonical reader's events, each numbered by root.
    Grouped(Grouped),
}

/// Where the events of one part go, once its roots are agents.
enum Place {
    /// Every event to this agent.
    Whole(u32),
    /// Event `i` to agent `map[group[i]]` (a [`Grouped`] part).
    Local { group: Vec<u32>, map: Vec<u32> },
    /// Event `i` to agent `of[i]`.
    Each(Vec<u32>),
}

/// A part's events, moved out one by one by [`scatter`] (each exactly once).
struct Moving {
    ptr: *const Event,
    len: usize,
}

// SAFETY: a `Moving` is only read through, each event by the one thread whose agents it
// belongs to (see `scatter`); `Event` is `Send` and `Sync`.
unsafe impl Send for Moving {}
// SAFETY: as for `Send` above: each event is read by one thread only.
unsafe impl Sync for Moving {}

/// Groups events by root, orders each agent by seq and resolves duplicates and conflicts;
/// returns the agents in root order and adds what it found to `acc`. Every event of a root
/// must be in the one call (roots may not straddle calls). The parts come in the order that
/// decides duplicates (first in (file, line) order wins; their events in order within).
pub fn assemble_events(
    parts: Vec<Part>,
    names: &[String],
    imported: &[bool],
    acc: &mut Accounting,
) -> Vec<Agent> {
    let (ag, places, mut lists) = index_parts(parts);
    let AgentIndex {
        index,
        roots,
        sizes,
        sources,
        ..
    } = ag;
    drop(index);
    // Pass 2: an agent whose events are one part's, all of it, takes that buffer as it is;
    // the others' events are moved once, in part order, into buffers of their exact size
    // (growing buffers by doubling copied and touched up to twice the memory, and fresh
    // memory is what ingest waits on most).
    let mut bufs: Vec<Vec<Event>> = (0..roots.len()).map(|_| Vec::new()).collect();
    for (list, place) in lists.iter_mut().zip(&places) {
        if let Place::Whole(a) = *place {
            if !list.is_empty() && sources[a as usize] == 1 {
                bufs[a as usize] = std::mem::take(list);
            }
        }
    }
    scatter(&mut lists, &places, &sizes, &mut bufs);
    drop(places);
    drop(lists);
    let mut agents: Vec<Resolved> = roots
        .into_par_iter()
        .zip(bufs)
        .map(|(root, evs)| resolve_agent(root, evs, names, imported))
        .collect();
    agents.par_sort_unstable_by(|a, b| a.agent.root.cmp(&b.agent.root));
    let mut out = Vec::with_capacity(agents.len());
    for mut r in agents {
        for (f, line) in r.dups {
            if imported[f as usize] {
                acc.dup_lines[f as usize].push(line);
            } else {
                acc.duplicates[f as usize] += 1;
            }
        }
        acc.conflicts.append(&mut r.conflicts);
        for (f, n) in r.per_file {
            acc.events[f as usize] += n;
            if !imported[f as usize] {
                acc.kept[f as usize] += n;
            }
        }
        for (f, line) in r.kept_lines {
            acc.kept_lines[f as usize].push(line);
        }
        out.push(r.agent);
    }
    out
}

/// Pass 1 of [`assemble_events`], on one thread: every part's roots as agents, and every
/// agent's size. A canonical reader's part names each root once (its groups), a spill buffer
/// one root; only an imported file's events are looked up one by one (runs of one root at a
/// time).
fn index_parts(parts: Vec<Part>) -> (AgentIndex, Vec<Place>, Vec<Vec<Event>>) {
    let mut ag = AgentIndex::default();
    let mut places: Vec<Place> = Vec::with_capacity(parts.len());
    let mut lists: Vec<Vec<Event>> = Vec::with_capacity(parts.len());
    for (p, part) in parts.into_iter().enumerate() {
        let (events, place) = match part {
            Part::OneRoot(events) => match events.first() {
                Some(ev) => {
                    let a = ag.agent(&ev.root);
                    ag.add(a, p, events.len());
                    (events, Place::Whole(a))
                }
                None => (events, Place::Each(Vec::new())),
            },
            Part::Grouped(g) => {
                let map: Vec<u32> = g.roots.iter().map(|r| ag.agent(r)).collect();
                for (&a, &n) in map.iter().zip(&g.sizes) {
                    ag.add(a, p, n as usize);
                }
                let place = match map[..] {
                    [a] => Place::Whole(a),
                    _ => Place::Local {
                        group: g.group,
                        map,
                    },
                };
                (g.events, place)
            }
            Part::Mixed(events) => {
                let mut of = Vec::with_capacity(events.len());
                let mut prev: Option<(&str, u32)> = None;
                for ev in &events {
                    let a = match prev {
                        Some((root, a)) if root == ev.root => a,
                        _ => ag.agent(&ev.root),
                    };
                    prev = Some((ev.root.as_str(), a));
                    ag.add(a, p, 1);
                    of.push(a);
                }
                let place = match of.first() {
                    Some(&a) if of.iter().all(|&b| b == a) => Place::Whole(a),
                    _ => Place::Each(of),
                };
                (events, place)
            }
        };
        lists.push(events);
        places.push(place);
    }
    (ag, places, lists)
}

/// One agent's events (all of them, in any order) ordered by seq, with duplicates and
/// conflicts dropped in place, imported ones renumbered, and its accounting per file.
fn resolve_agent(
    root: String,
    mut evs: Vec<Event>,
    names: &[String],
    imported: &[bool],
) -> Resolved {
    let is_imported = evs.iter().any(|e| imported[e.file as usize]);
    evs.sort_unstable_by_key(|e| (e.seq, e.file, e.line));
    // Duplicates and conflicts are dropped in place: the buffer is exact already
    // (sized by assembly), so most agents keep it as is. Only a buffer that lost
    // events is copied into one of its new size (keeping the spare raised the peak
    // by 30 MB on a generated log).
    let mut rej = Vec::new();
    let mut dups = Vec::new();
    let mut w = 0;
    for r in 0..evs.len() {
        if w > 0 {
            let (k, ev) = (&evs[w - 1], &evs[r]);
            if k.seq == ev.seq {
                if same_content(k, ev) {
                    dups.push((ev.file, ev.line));
                    continue;
                }
                if !is_imported {
                    rej.push(conflict_reject(names, k, ev));
                    continue;
                }
            }
        }
        evs.swap(w, r);
        w += 1;
    }
    evs.truncate(w);
    let mut kept = if evs.capacity() - w > w / 8 {
        let mut exact = Vec::with_capacity(w);
        exact.append(&mut evs);
        exact
    } else {
        evs
    };
    if is_imported {
        renumber_imported(&mut kept);
    }
    // Counted here, in parallel: a pass over every kept event on one thread
    // held up the write.
    let mut per_file: Vec<(u32, u64)> = Vec::new();
    let mut kept_lines = Vec::new();
    for ev in &kept {
        match per_file.iter_mut().find(|(f, _)| *f == ev.file) {
            Some((_, n)) => *n += 1,
            None => per_file.push((ev.file, 1)),
        }
        if is_imported && imported[ev.file as usize] {
            kept_lines.push((ev.file, ev.line));
        }
    }
    Resolved {
        agent: Agent { root, events: kept },
        conflicts: rej,
        dups,
        per_file,
        kept_lines,
    }
}

/// The agents [`assemble_events`] finds, numbered in order of first appearance, with their
/// event counts so far and the parts holding them.
#[derive(Default)]
struct AgentIndex {
    index: HashMap<String, u32, foldhash::fast::RandomState>,
    roots: Vec<String>,
    /// Events per agent.
    sizes: Vec<usize>,
    /// Parts holding events of each agent, and the last of them.
    sources: Vec<u32>,
    last_part: Vec<usize>,
}

impl AgentIndex {
    /// The agent of a root, added when new.
    fn agent(&mut self, root: &str) -> u32 {
        if let Some(&a) = self.index.get(root) {
            return a;
        }
        let a = self.roots.len() as u32;
        self.index.insert(root.to_string(), a);
        self.roots.push(root.to_string());
        self.sizes.push(0);
        self.sources.push(0);
        self.last_part.push(usize::MAX);
        a
    }

    /// Counts `n` events of agent `a` in part `p` (parts in order).
    fn add(&mut self, a: u32, p: usize, n: usize) {
        let a = a as usize;
        if n == 0 {
            return;
        }
        self.sizes[a] += n;
        if self.last_part[a] != p {
            self.last_part[a] = p;
            self.sources[a] += 1;
        }
    }
}

/// Moves the events left in `lists` into their agents' buffers (`bufs`, empty for those
/// agents), in part order, each buffer made with room for its agent's `sizes`. One thread
/// per range of agents (of about equal events) goes through every part and takes its own
/// agents' events: every event is moved once, and no buffer is shared between threads.
/// The lists are left empty (their events moved out; their memory freed with them).
fn scatter(lists: &mut [Vec<Event>], places: &[Place], sizes: &[usize], bufs: &mut [Vec<Event>]) {
    let total: usize = lists.iter().map(Vec::len).sum();
    if total == 0 {
        return;
    }
    // Ranges of agents of about equal events to move (an agent whose buffer is taken
    // already has no events left in `lists`).
    let threads = rayon::current_num_threads().max(1);
    let share = total.div_ceil(threads);
    let mut cuts = vec![0];
    let mut acc = 0;
    for (a, buf) in bufs.iter().enumerate() {
        if buf.is_empty() {
            acc += sizes[a];
        }
        if acc >= share && cuts.len() < threads {
            cuts.push(a + 1);
            acc = 0;
        }
    }
    cuts.push(bufs.len());
    cuts.dedup();
    let moving: Vec<Moving> = lists
        .iter_mut()
        .map(|l| {
            let m = Moving {
                ptr: l.as_ptr(),
                len: l.len(),
            };
            // SAFETY: the events stay where they are (the capacity is kept) and are moved
            // out below, each once; a list of length 0 drops none of them, so none is
            // dropped twice. (Should a thread panic, the events it did not move leak.)
            unsafe { l.set_len(0) };
            m
        })
        .collect();
    let mut ranges: Vec<(usize, &mut [Vec<Event>])> = Vec::with_capacity(cuts.len());
    let mut rest = bufs;
    for w in cuts.windows(2) {
        let (head, tail) = rest.split_at_mut(w[1] - w[0]);
        ranges.push((w[0], head));
        rest = tail;
    }
    let moved: usize = ranges
        .into_par_iter()
        .map(|(lo, bufs)| {
            for (k, buf) in bufs.iter_mut().enumerate() {
                if buf.is_empty() && sizes[lo + k] > 0 {
                    *buf = Vec::with_capacity(sizes[lo + k]);
                }
            }
            let mut moved = 0;
            // Takes event `i` of `m` for agent `a` when `a` is in this range.
            let mut take = |m: &Moving, i: usize, a: u32| {
                let k = (a as usize).wrapping_sub(lo);
                if k < bufs.len() {
                    // SAFETY: event `i` is in its list's initialised length, and is read by
                    // this thread alone (its agent is in this range alone), once; its list
                    // no longer owns it (length 0), so this is a move.
                    bufs[k].push(unsafe { std::ptr::read(m.ptr.add(i)) });
                    moved += 1;
                }
            };
            for (m, place) in moving.iter().zip(places) {
                match place {
                    Place::Whole(a) => (0..m.len).for_each(|i| take(m, i, *a)),
                    Place::Local { group, map } => {
                        for (i, &g) in group[..m.len].iter().enumerate() {
                            take(m, i, map[g as usize]);
                        }
                    }
                    Place::Each(of) => {
                        for (i, &a) in of[..m.len].iter().enumerate() {
                            take(m, i, a);
                        }
                    }
                }
            }
            moved
        })
        .sum();
    assert_eq!(moved, total, "every event moved to its agent once");
}

/// One agent as [`assemble_events`] resolved it, with what it adds to the [`Accounting`].
struct Resolved {
    agent: Agent,
    /// Lines that conflict with a kept event.
    conflicts: Vec<Reject>,
    /// (file, line) of each duplicate.
    dups: Vec<(u32, u64)>,
    /// Kept events per file.
    per_file: Vec<(u32, u64)>,
    /// (file, line) of each kept event of an imported file.
    kept_lines: Vec<(u32, u64)>,
}

/// The reject of a line whose (root, seq) was already kept with other content (§1).
fn conflict_reject(names: &[String], kept: &Event, ev: &Event) -> Reject {
    Reject {
        file: names[ev.file as usize].clone(),
        line: ev.line,
        reason: conflict_reason(
            &names[kept.file as usize],
            kept.line,
            ev.root.as_str(),
            ev.seq,
        ),
        excerpt: mask_secrets(&format!(
            "{{\"seq\":{},\"root\":{:?},\"session\":{:?},\"type\":{:?},\"data\":{}}}",
            ev.seq, ev.root, ev.session, ev.kind, ev.data
        ))
        .chars()
        .take(EXCERPT_BYTES)
        .collect(),
    }
}
