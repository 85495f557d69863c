//! Assembly: the files' events grouped by agent (`root`), ordered by `seq`, duplicates
//! dropped and conflicts rejected, first in (file path, line) order wins (SEMANTICS.md §1);
//! the per-file accounting of what assembly found, and the excerpts of conflicting lines.

use super::imported::{renumber_imported, resolve_imported_roots};
use super::read::{next_line, FileRead, LineRead};
use super::{Agent, FileSummary, IngestOptions, Ingested, Input, Reject};
use crate::decode::{excerpt, mask_secrets, EXCERPT_BYTES};
use crate::event::Event;
use crate::import::Format;
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs::File;
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
    let mut raw = BufReader::with_capacity(1 << 16, File::open(path)?);
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
    let mut out = HashMap::new();
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
                    out.insert(line_no, excerpt(l));
                }
            }
        }
    }
    Ok(out)
}

/// Whether two events with the same root and seq have the same content (as JSON values).
fn same_content(a: &Event, b: &Event) -> bool {
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

/// Groups the files' events by root, orders each agent by seq, and resolves duplicates:
/// equal content is one event; different content keeps the first in (file, line) order.
///
/// Imported files (IMPORTERS.md) differ in two ways. A session's root may be named only by
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
    let mut groups: Vec<Vec<Event>> = Vec::new();
    for mut fr in reads {
        if fr.summary.format.is_empty() {
            fr.summary.format = Format::Runlog.name().to_string();
        }
        imported.push(!matches!(fr.format, Format::Runlog | Format::Auto));
        files.push(fr.summary);
        rejects.extend(fr.rejects);
        all.push(fr.events);
        groups.append(&mut fr.groups);
    }
    resolve_imported_roots(&mut all, &imported);
    let one_root_from = all.len();
    all.append(&mut groups);
    let names: Vec<String> = files.iter().map(|f| f.file.clone()).collect();
    let mut acc = Accounting::new(files.len());
    let agents = assemble_events(all, one_root_from, &names, &imported, &mut acc);
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

/// Groups events by root, orders each agent by seq and resolves duplicates and conflicts;
/// returns the agents in root order and adds what it found to `acc`. Every event of a root
/// must be in the one call (roots may not straddle calls). The events come in parts (one
/// per file, say), each freed as soon as its events have moved to their agents. Parts from
/// index `one_root_from` on hold one root's events each (the canonical reader's groups), and
/// are placed by their first event alone.
pub fn assemble_events(
    parts: Vec<Vec<Event>>,
    one_root_from: usize,
    names: &[String],
    imported: &[bool],
    acc: &mut Accounting,
) -> Vec<Agent> {
    // Pass 1: every event's agent and every agent's size. A part holding one agent's
    // events only, when no other part holds any of them, becomes that agent's buffer as it
    // is; the other agents' events are moved once into buffers of their exact size (growing
    // buffers by doubling copied and touched up to twice the memory, and fresh memory is
    // what ingest waits on most).
    let mut ag = AgentIndex::default();
    // Per part: Some(agent) when all its events are that agent's.
    let mut part_agent: Vec<Option<u32>> = Vec::with_capacity(parts.len());
    let mut agent_of: Vec<u32> = Vec::new();
    for (p, part) in parts.iter().enumerate() {
        if p >= one_root_from {
            // One root's events: placed whole, without a look at every event (this pass
            // runs on one thread, between reading and writing).
            debug_assert!(part.iter().all(|e| e.root == part[0].root));
            let whole = part.first().map(|ev| {
                let a = ag.agent(&ev.root);
                ag.sizes[a as usize] += part.len();
                a
            });
            part_agent.push(whole);
            continue;
        }
        let mut single: Option<u32> = None;
        let mut mixed = false;
        let start = agent_of.len();
        let mut prev: Option<(&str, u32)> = None;
        for ev in part {
            let a = match prev {
                Some((root, a)) if root == ev.root => a,
                _ => ag.agent(&ev.root),
            };
            prev = Some((ev.root.as_str(), a));
            ag.sizes[a as usize] += 1;
            agent_of.push(a);
            match single {
                None => single = Some(a),
                Some(s) if s != a => mixed = true,
                _ => {}
            }
        }
        let whole = single.filter(|_| !mixed);
        if whole.is_some() {
            agent_of.truncate(start); // not needed: the part moves whole
        }
        part_agent.push(whole);
    }
    let AgentIndex {
        index,
        roots,
        sizes,
    } = ag;
    drop(index);
    // Pass 2: hand each agent its pieces, in part order: whole parts as they are, and the
    // events of mixed parts as runs. The copies into one buffer per agent are made below,
    // in parallel (on one thread, moving every event of agents spread over many files held
    // up the other core).
    let mut pieces: Vec<Vec<Vec<Event>>> = (0..sizes.len()).map(|_| Vec::new()).collect();
    let mut k = 0;
    for (p, (part, whole)) in parts.into_iter().zip(part_agent).enumerate() {
        match whole {
            Some(a) => pieces[a as usize].push(part),
            None => {
                // The part each agent's last run came from.
                let mut run_of: HashMap<u32, usize, foldhash::fast::RandomState> =
                    HashMap::default();
                for ev in part {
                    let a = agent_of[k];
                    k += 1;
                    let list = &mut pieces[a as usize];
                    if run_of.insert(a, p) != Some(p) {
                        list.push(Vec::new());
                    }
                    list.last_mut().expect("a run").push(ev);
                }
            }
        }
    }
    drop(agent_of);
    let by_root: Vec<(String, usize, Vec<Vec<Event>>)> = roots
        .into_iter()
        .zip(sizes)
        .zip(pieces)
        .map(|((root, size), pieces)| (root, size, pieces))
        .collect();
    let mut agents: Vec<Resolved> = by_root
        .into_par_iter()
        .map(|(root, size, mut pieces)| {
            // One part alone is the agent's buffer as it is; several are moved into one of
            // the exact size (growing a buffer by doubling copied and touched up to twice
            // the memory, and fresh memory is what ingest waits on most).
            let mut evs = if pieces.len() == 1 {
                pieces.pop().expect("one piece")
            } else {
                let mut all = Vec::with_capacity(size);
                for piece in pieces {
                    all.extend(piece);
                }
                all
            };
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
        })
        .collect();
    agents.sort_unstable_by(|a, b| a.agent.root.cmp(&b.agent.root));
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

/// The agents [`assemble_events`] finds, numbered in order of first appearance, with their
/// event counts so far.
#[derive(Default)]
struct AgentIndex {
    index: HashMap<String, u32, foldhash::fast::RandomState>,
    roots: Vec<String>,
    /// Events per agent.
    sizes: Vec<usize>,
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
        a
    }
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
        reason: format!(
            "{CONFLICT_REASON} {}:{} (same root {:?} and seq {}, different content)",
            names[kept.file as usize], kept.line, ev.root, ev.seq
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
