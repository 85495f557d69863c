//! Reading for a question whose tables depend on a few event types only
//! ([`IngestOptions::keep`]). A canonical line of another type is read no further than its
//! `seq`, `root` and `type` ([`crate::decode::peek_head`]): its payload is never looked
//! at, and it becomes no event. What a full ingest would have done with it matters only
//! where it shares a root and `seq` with a kept event (docs/semantics.md §1: the first of
//! the two in input order is kept, the other is a conflict). So each such line leaves a
//! [`Blocker`] (a key of its root, its `seq`, file and line), and [`settle`] finds the
//! places where one meets a kept event; there, and only there, the line is read again and
//! decoded in full, and when it is an event read before the kept one, the kept event goes,
//! as a full ingest would have rejected it.

use std::collections::HashMap;
use std::hash::BuildHasher;

use rayon::prelude::*;

use super::assemble::for_lines;
use super::{IngestOptions, Ingested, Input};
use crate::event::{Kind, KindSet};
use crate::import::Format;

/// A line of a type not kept: its root (as a key), `seq` and line (its file is that of
/// the [`Blockers`] holding it). 24 bytes: a read keeps one for most lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocker {
    /// [`root_key`] of its root.
    pub key: u64,
    pub seq: u64,
    pub line: u64,
}

/// The blockers of one file (or one piece of it), in the order read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blockers {
    pub file: u32,
    pub list: Vec<Blocker>,
}

/// A key of a root's bytes (equal roots, equal keys; a match is confirmed on the text).
#[inline]
pub fn root_key(root: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(root)
}

/// The kind of a type named by `kind`'s bytes (`None`: not UTF-8). A listed type is
/// known by its bytes; only another is checked as UTF-8 (a call of `from_utf8` per line
/// not kept was ~5 % of the finish-reason query's CPU).
#[inline]
pub fn kind_of(kind: &[u8]) -> Option<Kind> {
    match Kind::of_bytes(kind) {
        Kind::Other => std::str::from_utf8(kind).ok().map(|_| Kind::Other),
        k => Some(k),
    }
}

/// Makes the assembled agents of a read under `keep` hold what a full ingest's hold of the
/// kinds kept: drops the events of other kinds (an imported file's, decoded whole), and
/// each kept event that a valid line of another type, read before it, displaced (see the
/// module's header). `false` when that cannot be told here: an agent with events of an
/// imported file (whose `seq`s are numbered anew from all its events, without conflicts)
/// shares its root with a blocker; the inputs must then be read whole.
pub(super) fn settle(
    ing: &mut Ingested,
    blockers: &[Blockers],
    files: &[Input],
    opts: &IngestOptions,
    keep: KindSet,
) -> bool {
    let imported: Vec<bool> = ing
        .files
        .iter()
        .map(|f| f.format != Format::Runlog.name())
        .collect();
    if imported.iter().any(|&i| i) {
        let mixed: std::collections::HashSet<u64> = ing
            .agents
            .iter()
            .filter(|a| a.events.iter().any(|e| imported[e.file as usize]))
            .map(|a| root_key(a.root.as_bytes()))
            .collect();
        let clash = blockers
            .par_iter()
            .any(|bs| bs.list.iter().any(|b| mixed.contains(&b.key)));
        if clash {
            return false;
        }
        ing.agents.par_iter_mut().for_each(|a| {
            a.events.retain(|e| keep.contains(e.index.kind(&e.kind)));
        });
    }
    let hits = meetings(ing, blockers);
    if !hits.is_empty() {
        displace(ing, hits, files, opts, keep);
    }
    ing.agents.retain(|a| !a.events.is_empty());
    true
}

/// Where a blocker meets a kept event: the agent, the event, and the blocker's file and line.
type Hit = (usize, usize, u32, u64);

/// The blockers that share a root key and `seq` with a kept event. An agent's events are
/// in `seq` order: a blocker finds its agent by key and its event by a binary search over
/// the agent's `seq`s, copied once into one flat list (searching the events themselves
/// touched a 96-byte event per step, a cache miss each, for every line not kept; a map of
/// every kept event cost more, in memory it touched, than the search).
fn meetings(ing: &Ingested, blockers: &[Blockers]) -> Vec<Hit> {
    if blockers.iter().all(|b| b.list.is_empty()) {
        return Vec::new();
    }
    let mut agent_of: HashMap<u64, usize, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(ing.agents.len(), Default::default());
    // Agent `a`'s `seq`s are `seqs[start[a]..start[a + 1]]`.
    let mut start: Vec<usize> = Vec::with_capacity(ing.agents.len() + 1);
    let mut seqs: Vec<u64> = Vec::with_capacity(ing.agents.iter().map(|a| a.events.len()).sum());
    for (a, agent) in ing.agents.iter().enumerate() {
        agent_of.insert(root_key(agent.root.as_bytes()), a);
        start.push(seqs.len());
        seqs.extend(agent.events.iter().map(|e| e.seq));
    }
    start.push(seqs.len());
    blockers
        .par_iter()
        .flat_map_iter(|bs| {
            let (agent_of, start, seqs) = (&agent_of, &start, &seqs);
            bs.list.iter().filter_map(move |b| {
                let &a = agent_of.get(&b.key)?;
                let i = seqs[start[a]..start[a + 1]].binary_search(&b.seq).ok()?;
                Some((a, i, bs.file, b.line))
            })
        })
        .collect()
}

/// Reads the blockers' lines again, whole; drops each kept event that a valid event of
/// another kind, of its root and `seq`, precedes in input order.
fn displace(
    ing: &mut Ingested,
    mut hits: Vec<Hit>,
    files: &[Input],
    opts: &IngestOptions,
    keep: KindSet,
) {
    hits.sort_by_key(|&(_, _, file, line)| (file, line));
    let mut gone: Vec<(usize, usize)> = Vec::new();
    for group in hits.chunk_by(|x, y| x.2 == y.2) {
        let Some(input) = files.get(group[0].2 as usize) else {
            continue;
        };
        let lines: Vec<u64> = group.iter().map(|h| h.3).collect();
        let mut valid: HashMap<u64, (String, u64, Kind)> = HashMap::new();
        // A file that cannot be read again leaves its kept events as they are.
        let _ = for_lines(&input.path, &lines, opts.max_line_bytes, |n, l| {
            if let Ok(ev) = crate::decode::parse_line(l) {
                valid.insert(n, (ev.root.to_string(), ev.seq, Kind::of(&ev.kind)));
            }
        });
        for &(a, i, file, line) in group {
            let agent = &ing.agents[a];
            let ev = &agent.events[i];
            let Some((root, seq, kind)) = valid.get(&line) else {
                continue;
            };
            let displaces = *root == agent.root
                && *seq == ev.seq
                && !keep.contains(*kind)
                && (file, line) < (ev.file, ev.line);
            if displaces {
                gone.push((a, i));
            }
        }
    }
    gone.sort_unstable();
    gone.dedup();
    for &(a, i) in gone.iter().rev() {
        ing.agents[a].events.remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type's kind from its bytes is its kind from its text; bytes that are not UTF-8
    /// have none (their line is decoded in full, and rejected there).
    #[test]
    fn kind_of_bytes_is_kind_of_text() {
        for t in [
            "text/delta",
            "turn/end",
            "log",
            "agent/idle",
            "inbox/receipt",
            "run.cancelled",
            "",
            "x",
            "text/delta2",
            "custom/thing",
            "é/ü",
        ] {
            assert_eq!(kind_of(t.as_bytes()), Some(Kind::of(t)), "{t}");
        }
        for bad in [
            &b"text/\xffelta"[..],
            b"\xff",
            b"turn/end\xc3",
            b"\xc3\x28abcdefgh",
        ] {
            assert_eq!(kind_of(bad), None, "{bad:?}");
        }
    }
}
