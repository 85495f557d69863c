//! Which spool lines each agent's records are on, so that a commit maps again only the
//! lines its batch touched. The OTLP importer gives a span the root of its tree: the
//! conversation id (`gen_ai.conversation.id`, `session.id`) of the outermost span above
//! it, else its trace id; a log record its span's root, else its own conversation's or
//! trace's, else the spool file's name. So the records that can end up in one agent are
//! linked by the trace ids and conversation ids they carry: a *group* is a set of such
//! keys linked together (a union-find), with the spool lines holding its records and the
//! roots its agents had at the last commit. The importer maps a group's records alike
//! whatever other records a file holds, since nothing links them.
//!
//! Keys are held by their 64-bit hash, not their text (a receiver holds one per trace and
//! conversation it ever received): two keys of the same hash only make one group of
//! theirs, whose lines a commit then maps together, each agent as a file ingest maps it.

use std::collections::{BTreeSet, HashMap};

use super::lines::Links;

/// The hash a key is held by.
pub(super) fn key_hash(key: &str) -> u64 {
    runlog_core::fingerprint::content_hash(key.as_bytes())
}

/// A group, by the index of its representative key.
pub type Group = u32;

/// The groups of a spool's records.
#[derive(Debug, Default)]
pub struct Groups {
    /// A key's hash -> its node.
    ids: HashMap<u64, u32>,
    parent: Vec<u32>,
    /// Per representative: the spool lines (0-based) holding its records, ascending.
    lines: Vec<Vec<u32>>,
    /// Per representative: the roots of its agents at the last commit.
    roots: Vec<Box<[Box<str>]>>,
    /// Groups that got lines since [`Groups::take_touched`].
    touched: Vec<u32>,
}

impl Groups {
    fn node(&mut self, h: u64) -> u32 {
        if let Some(&n) = self.ids.get(&h) {
            return n;
        }
        let n = self.parent.len() as u32;
        self.ids.insert(h, n);
        self.parent.push(n);
        self.lines.push(Vec::new());
        self.roots.push(Box::default());
        n
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let up = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = up;
            x = up;
        }
        x
    }

    fn union(&mut self, a: u32, b: u32) -> u32 {
        let (a, b) = (self.find(a), self.find(b));
        if a == b {
            return a;
        }
        // The larger keeps its lists; the smaller's are merged in.
        let (big, small) = if self.lines[a as usize].len() >= self.lines[b as usize].len() {
            (a, b)
        } else {
            (b, a)
        };
        self.parent[small as usize] = big;
        let moved = std::mem::take(&mut self.lines[small as usize]);
        let into = &mut self.lines[big as usize];
        into.extend(moved);
        into.sort_unstable();
        into.dedup();
        let moved = std::mem::take(&mut self.roots[small as usize]);
        if !moved.is_empty() {
            // The roots move, not copied: a boxed slice becomes a vector in place.
            let into = &mut self.roots[big as usize];
            let mut all = Vec::from(std::mem::take(into));
            all.extend(Vec::from(moved));
            *into = all.into_boxed_slice();
        }
        big
    }

    /// Records the spool line `line` (0-based), whose records carry the keys `records`
    /// (each record's: its trace id and conversation ids; `file` for a record with none).
    pub fn add(&mut self, line: u32, records: &Links, file: &str) {
        let mut last: Option<&[u64]> = None;
        for keys in records.records() {
            // Records of one trace follow each other: one lookup for the run.
            if last == Some(keys) {
                continue;
            }
            let mut g = match keys.first() {
                Some(&k) => self.node(k),
                None => self.node(key_hash(file)),
            };
            for &k in keys.iter().skip(1) {
                let n = self.node(k);
                g = self.union(g, n);
            }
            let g = self.find(g);
            let lines = &mut self.lines[g as usize];
            if lines.last() != Some(&line) {
                lines.push(line);
                self.touched.push(g);
            }
            last = Some(keys);
        }
    }

    /// The groups that got lines since the last call.
    pub fn take_touched(&mut self) -> BTreeSet<Group> {
        let touched = std::mem::take(&mut self.touched);
        touched.into_iter().map(|g| self.find(g)).collect()
    }

    /// Every group.
    pub fn all(&mut self) -> BTreeSet<Group> {
        (0..self.parent.len() as u32)
            .map(|g| self.find(g))
            .collect()
    }

    /// The spool lines (0-based, ascending) holding the records of `groups`.
    pub fn lines_of(&self, groups: &BTreeSet<Group>) -> Vec<u32> {
        let mut v: Vec<u32> = groups
            .iter()
            .flat_map(|&g| self.lines[g as usize].iter().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The group of a root (a key), if known.
    pub fn group_of(&mut self, key: &str) -> Option<Group> {
        let n = *self.ids.get(&key_hash(key))?;
        Some(self.find(n))
    }

    /// [`Groups::group_of`] without shortening paths on the way (for a shared borrow).
    pub fn peek_group(&self, key: &str) -> Option<Group> {
        let mut x = *self.ids.get(&key_hash(key))?;
        while self.parent[x as usize] != x {
            x = self.parent[x as usize];
        }
        Some(x)
    }

    /// The roots of a group's agents at the last commit.
    pub fn roots(&self, g: Group) -> &[Box<str>] {
        &self.roots[g as usize]
    }

    /// Sets the roots of a group's agents (after a commit).
    pub fn set_roots(&mut self, g: Group, roots: Vec<String>) {
        self.roots[g as usize] = roots.into_iter().map(String::into_boxed_str).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(records: &[&[&str]]) -> Links {
        let mut l = Links::default();
        for r in records {
            l.push(r.iter().copied());
        }
        l
    }

    #[test]
    fn records_linked_by_a_conversation_are_one_group_with_all_their_lines() {
        let mut g = Groups::default();
        g.add(0, &links(&[&["t1"], &["t2"]]), "f");
        g.add(1, &links(&[&["t3", "c"]]), "f");
        let first = g.take_touched();
        assert_eq!(first.len(), 3);
        // A later span of t1 names the conversation of t3: t1 and t3 are one group now.
        g.add(2, &links(&[&["t1", "c"], &[]]), "f");
        let touched = g.take_touched();
        let t1 = g.group_of("t1").unwrap();
        assert_eq!(g.group_of("t3"), Some(t1));
        assert_eq!(g.group_of("c"), Some(t1));
        assert_ne!(g.group_of("t2"), Some(t1));
        assert!(touched.contains(&t1));
        assert!(touched.contains(&g.group_of("f").unwrap()));
        assert_eq!(g.lines_of(&BTreeSet::from([t1])), vec![0, 1, 2]);
        let t2 = g.group_of("t2").unwrap();
        assert_eq!(g.lines_of(&BTreeSet::from([t2])), vec![0]);
        assert_eq!(g.all().len(), 3);
    }
}
