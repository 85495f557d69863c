//! The fingerprint of an input file, so that `runlog ingest --append` knows what it read
//! before: a file with the same fingerprint is skipped, a plain file that only grew has
//! only its new lines read, any other change re-reads the file whole.
//!
//! A fingerprint is the file's size, the length up to and including its last newline
//! (`complete`), the [`content_hash`] of those bytes, the hash of the bytes after them (a
//! last line without its newline), and what the reader made of it: the lines it went through (so that new lines
//! are numbered on), its format, its name relative to the command-line folder (importers
//! use it for missing ids), and the warehouse buckets its events went to. An object read
//! from a store also keeps what the store's listing said of it ([`ObjectStamp`]: size and
//! e_tag), so that an append of the same prefix skips it without downloading it.
//!
//! A SQLite database (an OpenCode `opencode.db`) is read with its write-ahead log beside
//! it (`<file>-wal`), which holds the rows committed since the last checkpoint while the
//! main file's bytes stay as they were: the hash of such a file is that of its bytes and
//! of its WAL's ([`wal_hash`]), so that rows written to the WAL alone change it.

use std::collections::BTreeSet;
use std::fs::File;
use std::hash::Hasher;
use std::io::{self, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};
use twox_hash::XxHash3_64;

/// What an ingest recorded of one input file (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub size: u64,
    /// Bytes up to and including the last newline.
    pub complete: u64,
    /// [`content_hash`] of the first `complete` bytes.
    pub hash: u64,
    /// [`content_hash`] of the bytes after `complete` (a last line without its newline).
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
    /// For an object in a store: what the store said of it when it was read (none for a
    /// local file, and in indexes written before objects were stamped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectStamp>,
}

/// What a store's listing says of an object (`object_store`'s `ObjectMeta`): enough to
/// tell, without downloading it, that it is the object read before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectStamp {
    pub size: u64,
    /// The store's entity tag: changes whenever the object is written again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e_tag: Option<String>,
    /// When it was last written (RFC 3339), compared only where the store gives no e_tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl ObjectStamp {
    /// Whether the object listed as `now` is, by its listing, the one this stamp was taken
    /// of: the same size and e_tag; where neither has an e_tag, the same size and time of
    /// the last write. Anything less (no stamp to compare, one e_tag missing) is not known
    /// to be the same, and the object is downloaded and compared by its bytes.
    pub fn same_object(&self, now: &ObjectStamp) -> bool {
        self.size == now.size
            && match (&self.e_tag, &now.e_tag) {
                (Some(a), Some(b)) => a == b,
                (None, None) => {
                    self.last_modified.is_some() && self.last_modified == now.last_modified
                }
                _ => false,
            }
    }
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

/// The hash of a fingerprint: XXH3 64 (seed 0), a fixed function (so every release reads
/// an older warehouse's index alike) that runs at memory speed. (FNV-1a, one byte per
/// multiply, took a quarter of a second per 200 MB, on every full ingest.)
pub fn content_hash(bytes: &[u8]) -> u64 {
    XxHash3_64::oneshot(bytes)
}

/// Bytes a [`scan`] reads at a time.
const SCAN_BUFFER: usize = 1 << 20;

/// Reads a file once: its size, complete-line length and hashes ([`content_hash`] of the
/// complete lines, of the cut last line, and, with `probe`, of the first `probe` bytes).
pub fn scan(path: &Path, probe: Option<u64>) -> io::Result<Scan> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; SCAN_BUFFER];
    let mut sc = Scanner::default();
    let mut probe_hash = (probe == Some(0)).then(|| sc.all.finish());
    let mut compressed = false;
    let mut sqlite = false;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        let (pos, end) = (sc.size, sc.size + n as u64);
        if pos == 0 {
            compressed = is_compressed(chunk);
            sqlite = chunk.starts_with(SQLITE_MAGIC);
        }
        match probe.filter(|&p| p > pos && p <= end && probe_hash.is_none()) {
            Some(p) => {
                let (a, b) = chunk.split_at((p - pos) as usize);
                sc.feed(a);
                probe_hash = Some(sc.all.finish());
                sc.feed(b);
            }
            None => sc.feed(chunk),
        }
    }
    let mut s = sc.scan();
    s.compressed = compressed;
    s.probe_hash = probe_hash;
    if sqlite {
        if let Some(wal) = wal_hash(path)? {
            let mut both = [0u8; 16];
            both[..8].copy_from_slice(&s.hash.to_le_bytes());
            both[8..].copy_from_slice(&wal.to_le_bytes());
            s.hash = content_hash(&both);
        }
    }
    Ok(s)
}

/// Whether a file's first bytes are those of gzip or zstd.
fn is_compressed(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// A [`scan`] taken as a file is written: fed its bytes in order (as they are appended),
/// it gives the [`Scan`] that reading the file would give, without reading it again.
pub struct Scanner {
    /// Fed every byte.
    all: XxHash3_64,
    /// Fed the bytes after the last newline.
    tail: XxHash3_64,
    size: u64,
    complete: u64,
    /// `all` at the last newline.
    hash: u64,
    compressed: bool,
}

impl Default for Scanner {
    fn default() -> Self {
        let all = XxHash3_64::default();
        let hash = all.finish();
        Scanner {
            all,
            tail: XxHash3_64::default(),
            size: 0,
            complete: 0,
            hash,
            compressed: false,
        }
    }
}

impl Scanner {
    /// Takes the next bytes of the file.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.size == 0 && !bytes.is_empty() {
            self.compressed = is_compressed(bytes);
        }
        match memchr::memrchr(b'\n', bytes) {
            Some(i) => {
                let (lines, rest) = bytes.split_at(i + 1);
                self.all.write(lines);
                self.size += lines.len() as u64;
                self.complete = self.size;
                self.hash = self.all.finish();
                self.tail = XxHash3_64::default();
                self.all.write(rest);
                self.tail.write(rest);
                self.size += rest.len() as u64;
            }
            None => {
                self.all.write(bytes);
                self.tail.write(bytes);
                self.size += bytes.len() as u64;
            }
        }
    }

    /// The scan of the bytes fed so far (no probe).
    pub fn scan(&self) -> Scan {
        Scan {
            size: self.size,
            complete: self.complete,
            hash: self.hash,
            tail_hash: self.tail.finish(),
            compressed: self.compressed,
            probe_hash: None,
        }
    }
}

/// The first bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// The [`content_hash`] of the write-ahead log beside the SQLite database at `path`
/// (`<path>-wal`); `None` when there is none or it is empty (SQLite then reads the main
/// file alone).
pub fn wal_hash(path: &Path) -> io::Result<Option<u64>> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let mut f = match File::open(&wal) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut h = XxHash3_64::default();
    let mut buf = vec![0u8; SCAN_BUFFER];
    let mut size = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.write(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok((size > 0).then(|| h.finish()))
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
            object: None,
        }
    }

    /// Whether the object listed as `listed` is the one this fingerprint was taken of, by
    /// its listing alone (see [`ObjectStamp::same_object`]): then it is unchanged, and
    /// need not be downloaded.
    pub fn unchanged_by_listing(&self, listed: &ObjectStamp) -> bool {
        self.size == listed.size && self.object.as_ref().is_some_and(|o| o.same_object(listed))
    }

    /// The scan of the bytes this fingerprint was taken of (for an input known unchanged
    /// without reading it).
    pub fn scan(&self) -> Scan {
        Scan {
            size: self.size,
            complete: self.complete,
            hash: self.hash,
            tail_hash: self.tail_hash,
            compressed: self.compressed,
            probe_hash: None,
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
    fn hashes_are_of_the_complete_lines_the_tail_and_the_probe() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "foobar\ncut").unwrap();
        let s = scan(&p, Some(3)).unwrap();
        assert_eq!(s.size, 10);
        assert_eq!(s.complete, 7);
        assert_eq!(s.hash, content_hash(b"foobar\n"));
        assert_eq!(s.tail_hash, content_hash(b"cut"));
        assert_eq!(s.probe_hash, Some(content_hash(b"foo")));
        // Across buffers: lines longer than one read, the probe in any of them.
        let long: Vec<u8> = (0..3 * SCAN_BUFFER + 17)
            .map(|i| {
                if i % 100_003 == 0 {
                    b'\n'
                } else {
                    b'a' + (i % 26) as u8
                }
            })
            .collect();
        std::fs::write(&p, &long).unwrap();
        let last_nl = long.iter().rposition(|&b| b == b'\n').unwrap() + 1;
        for probe in [0, 1, SCAN_BUFFER, SCAN_BUFFER + 5, last_nl, long.len()] {
            let s = scan(&p, Some(probe as u64)).unwrap();
            assert_eq!(s.size, long.len() as u64);
            assert_eq!(s.complete, last_nl as u64);
            assert_eq!(s.hash, content_hash(&long[..last_nl]));
            assert_eq!(s.tail_hash, content_hash(&long[last_nl..]));
            assert_eq!(
                s.probe_hash,
                Some(content_hash(&long[..probe])),
                "probe {probe}"
            );
        }
    }

    /// Rows written to a database's WAL alone (its main file's bytes as they were) change
    /// its fingerprint; a checkpoint that empties the WAL into the file changes it again.
    #[cfg(feature = "opencode-db")]
    #[test]
    fn a_databases_wal_is_part_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("opencode.db");
        let conn = rusqlite::Connection::open(&p).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (a); PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .unwrap();
        let file = std::fs::read(&p).unwrap();
        let old = Fingerprint::new(&scan(&p, None).unwrap(), 0, "opencode", "opencode.db");
        conn.execute("INSERT INTO t VALUES (1)", []).unwrap();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            file,
            "the row is in the WAL only"
        );
        let (change, s) = old.compare(&p).unwrap();
        assert_eq!(change, Change::Changed);
        assert_eq!(s.size, old.size);
        let new = Fingerprint::new(&s, 0, "opencode", "opencode.db");
        assert_eq!(new.compare(&p).unwrap().0, Change::Unchanged);
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        assert_eq!(new.compare(&p).unwrap().0, Change::Changed);
    }

    #[test]
    fn a_scanner_fed_the_bytes_gives_the_scan_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        let mut sc = Scanner::default();
        let mut bytes = Vec::new();
        assert_eq!(sc.scan(), scan_of(&p, &bytes));
        for part in [&b"ab"[..], b"c\nde", b"f\n", b"g", b"", b"h\ni\nj"] {
            sc.feed(part);
            bytes.extend_from_slice(part);
            assert_eq!(sc.scan(), scan_of(&p, &bytes), "after {bytes:?}");
        }
        let mut gz = Scanner::default();
        gz.feed(&[0x1f, 0x8b, 8, 0]);
        assert!(gz.scan().compressed);
    }

    fn scan_of(p: &Path, bytes: &[u8]) -> Scan {
        std::fs::write(p, bytes).unwrap();
        scan(p, None).unwrap()
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

    fn stamp(size: u64, e_tag: Option<&str>, at: Option<&str>) -> ObjectStamp {
        ObjectStamp {
            size,
            e_tag: e_tag.map(str::to_string),
            last_modified: at.map(str::to_string),
        }
    }

    /// Unchanged by its listing: the same size and e_tag (the time of the last write only
    /// where neither has an e_tag); anything else is downloaded and compared.
    #[test]
    fn objects_are_unchanged_by_listing_only_with_the_same_size_and_e_tag() {
        let t1 = Some("2026-01-01T00:00:00+00:00");
        let t2 = Some("2026-01-02T00:00:00+00:00");
        let before = stamp(10, Some("\"abc\""), t1);
        assert!(before.same_object(&stamp(10, Some("\"abc\""), t2)));
        assert!(!before.same_object(&stamp(10, Some("\"abd\""), t1)));
        assert!(!before.same_object(&stamp(11, Some("\"abc\""), t1)));
        assert!(!before.same_object(&stamp(10, None, t1)));
        assert!(!stamp(10, None, t1).same_object(&before));
        assert!(stamp(10, None, t1).same_object(&stamp(10, None, t1)));
        assert!(!stamp(10, None, t1).same_object(&stamp(10, None, t2)));
        assert!(!stamp(10, None, None).same_object(&stamp(10, None, None)));

        let mut fp = Fingerprint {
            size: 10,
            ..Default::default()
        };
        // A file read from disk (or an index older than stamps): never by listing.
        assert!(!fp.unchanged_by_listing(&before));
        fp.object = Some(before.clone());
        assert!(fp.unchanged_by_listing(&before));
        assert!(!fp.unchanged_by_listing(&stamp(10, Some("\"new\""), t1)));
        // The stamp and the bytes read disagree on the size: read it again.
        fp.size = 9;
        assert!(!fp.unchanged_by_listing(&before));
    }

    /// Indexes written before objects were stamped still read, with no stamp.
    #[test]
    fn older_fingerprints_read_without_a_stamp() {
        let old = r#"{"size":3,"complete":3,"hash":1,"tail_hash":2,"lines":1,
            "compressed":false,"format":"runlog","rel":"x.jsonl","buckets":[4]}"#;
        let fp: Fingerprint = serde_json::from_str(old).unwrap();
        assert_eq!(fp.object, None);
        assert_eq!(fp.buckets, BTreeSet::from([4]));
        let text = serde_json::to_string(&fp).unwrap();
        assert!(!text.contains("object"), "{text}");
        let mut stamped = fp.clone();
        stamped.object = Some(stamp(3, Some("e"), None));
        let back: Fingerprint =
            serde_json::from_str(&serde_json::to_string(&stamped).unwrap()).unwrap();
        assert_eq!(back, stamped);
    }
}
