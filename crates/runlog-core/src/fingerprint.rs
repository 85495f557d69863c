//! The fingerprint of an input file, so that `runlog ingest --append` knows what it read
//! before: a file with the same fingerprint is skipped, a plain file that only grew has
//! only its new lines read, any other change re-reads the file whole.
//!
//! A fingerprint is the file's size, the length up to and including its last newline
//! (`complete`), the FNV-1a 64 hash of those bytes (the same function as
//! [`crate::shard::root_hash`]), the hash of the bytes after them (a last line without its
//! newline), and what the reader made of it: the lines it went through (so that new lines
//! are numbered on), its format, its name relative to the command-line folder (importers
//! use it for missing ids), and the warehouse buckets its events went to.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// FNV-1a 64, fed in pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(Fnv::OFFSET)
    }
}

impl Fnv {
    pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    pub const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// Feeds `bytes` to the hash.
    #[inline]
    pub fn add(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(Fnv::PRIME);
        }
        self.0 = h;
    }
}

/// What an ingest recorded of one input file (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub size: u64,
    /// Bytes up to and including the last newline.
    pub complete: u64,
    /// FNV-1a 64 of the first `complete` bytes.
    pub hash: u64,
    /// FNV-1a 64 of the bytes after `complete` (a last line without its newline).
    pub tail_hash: u64,
    /// Lines the reader went through (blank ones included): the next line's number - 1.
    pub lines: u64,
    /// gzip or zstd: a change re-reads it whole (a stream cannot resume at a line).
    pub compressed: bool,
    /// The format it was read as (`runlog`, or an importer's source).
    pub format: String,
    /// Its name relative to the command-line folder it was found under.
    pub rel: String,
    /// The warehouse buckets holding its events (a superset).
    #[serde(default)]
    pub buckets: BTreeSet<u32>,
}

/// How a file compares with its fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Not read before.
    New,
    /// The same bytes: skipped.
    Unchanged,
    /// Lines were added at the end of a plain canonical file that ended with a newline:
    /// read from byte `from`, numbering lines after `lines`.
    Grown { from: u64, lines: u64 },
    /// Anything else: read whole, its old rows retracted.
    Changed,
}

/// The bytes of a file as a fingerprint sees them (without what the reader adds), and the
/// hash of its first `probe` bytes when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    pub size: u64,
    pub complete: u64,
    pub hash: u64,
    pub tail_hash: u64,
    pub compressed: bool,
    pub probe_hash: Option<u64>,
}

/// Reads a file once: its size, complete-line length and hashes.
pub fn scan(path: &Path, probe: Option<u64>) -> io::Result<Scan> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut pos, mut whole, mut tail) = (0u64, Fnv::default(), Fnv::default());
    let mut s = Scan {
        size: 0,
        complete: 0,
        hash: Fnv::OFFSET,
        tail_hash: Fnv::OFFSET,
        compressed: false,
        probe_hash: None,
    };
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let mut chunk = &buf[..n];
        if pos == 0 {
            s.compressed =
                chunk.starts_with(&[0x1f, 0x8b]) || chunk.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
        }
        while !chunk.is_empty() {
            // Cut at the next newline or the probe, whichever comes first.
            let to_probe = probe
                .filter(|&p| p > pos && s.probe_hash.is_none())
                .map(|p| (p - pos) as usize);
            let nl = memchr::memchr(b'\n', chunk).map(|i| i + 1);
            let cut = match (nl, to_probe) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).unwrap_or(chunk.len()),
            }
            .min(chunk.len());
            let (head, rest) = chunk.split_at(cut);
            whole.add(head);
            tail.add(head);
            pos += cut as u64;
            if head.last() == Some(&b'\n') {
                s.complete = pos;
                s.hash = whole.0;
                tail = Fnv::default();
            }
            if probe == Some(pos) {
                s.probe_hash = Some(whole.0);
            }
            chunk = rest;
        }
    }
    if probe == Some(0) {
        s.probe_hash = Some(Fnv::OFFSET);
    }
    s.size = pos;
    s.tail_hash = tail.0;
    Ok(s)
}

impl Fingerprint {
    /// The fingerprint of a scanned file that the reader went through.
    pub fn new(s: &Scan, lines: u64, format: &str, rel: &str) -> Fingerprint {
        Fingerprint {
            size: s.size,
            complete: s.complete,
            hash: s.hash,
            tail_hash: s.tail_hash,
            lines,
            compressed: s.compressed,
            format: format.to_string(),
            rel: rel.to_string(),
            buckets: BTreeSet::new(),
        }
    }

    /// How the file at `path` compares with this fingerprint, and its scan.
    pub fn compare(&self, path: &Path) -> io::Result<(Change, Scan)> {
        let s = scan(path, Some(self.size))?;
        let change = if s.size == self.size
            && s.complete == self.complete
            && s.hash == self.hash
            && s.tail_hash == self.tail_hash
        {
            Change::Unchanged
        } else if s.size > self.size
            && self.complete == self.size
            && !self.compressed
            && !s.compressed
            && self.format == "runlog"
            && s.probe_hash == Some(self.hash)
        {
            Change::Grown {
                from: self.size,
                lines: self.lines,
            }
        } else {
            Change::Changed
        };
        Ok((change, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(path: &Path, lines: u64) -> Fingerprint {
        Fingerprint::new(&scan(path, None).unwrap(), lines, "runlog", "x.jsonl")
    }

    #[test]
    fn hash_is_fnv1a64_of_the_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "foobar\ncut").unwrap();
        let s = scan(&p, Some(3)).unwrap();
        assert_eq!(s.size, 10);
        assert_eq!(s.complete, 7);
        assert_eq!(s.hash, crate::shard::root_hash("foobar\n"));
        assert_eq!(s.tail_hash, crate::shard::root_hash("cut"));
        assert_eq!(s.probe_hash, Some(crate::shard::root_hash("foo")));
    }

    #[test]
    fn unchanged_grown_and_changed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "a\nb\n").unwrap();
        let old = fp(&p, 2);
        assert_eq!(old.compare(&p).unwrap().0, Change::Unchanged);
        std::fs::write(&p, "a\nb\nc\n").unwrap();
        assert_eq!(
            old.compare(&p).unwrap().0,
            Change::Grown { from: 4, lines: 2 }
        );
        std::fs::write(&p, "a\nB\nc\n").unwrap();
        assert_eq!(old.compare(&p).unwrap().0, Change::Changed);
        // A last line without its newline was read as cut: growing it is a change.
        std::fs::write(&p, "a\nb").unwrap();
        let cut = fp(&p, 2);
        std::fs::write(&p, "a\nbc\n").unwrap();
        assert_eq!(cut.compare(&p).unwrap().0, Change::Changed);
        std::fs::write(&p, "a\nb").unwrap();
        assert_eq!(cut.compare(&p).unwrap().0, Change::Unchanged);
    }
}
