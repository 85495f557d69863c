//! The spill's partition files: [`Spill`] (the files being written), [`SpillBatch`] (a
//! reader's records on their way to them, encoded straight from each line's envelope) and
//! [`read_partition`] (a partition read back as events). Readers write here; the spilled
//! ingest that drives them (`spill`) reads the partitions back.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::ids::Ids;
use super::keep::root_key;
use crate::decode::Envelope;
use crate::error::{Error, Result};
use crate::event::payload::INDEX_BYTES;
use crate::event::{Event, Id, Kind, PayloadIndex};

/// Events a reader encodes before it writes them to the partitions.
pub const SPILL_BATCH: usize = 8192;

/// The partition of a root among `n`, from its bytes: from its [`root_key`], the key a
/// line of the root not kept leaves ([`super::keep::Blocker`]), so that such a line is
/// placed with the one hash (an FNV-1a hash of the root besides, a byte at a time, and a
/// UTF-8 check of it were ~4 % of a 2 GB finish-reason query's CPU). The key is not the
/// shards' hash ([`crate::shard::root_hash`]): partitions and shards of the same count do
/// not coincide.
pub fn partition_of(root: &[u8], n: usize) -> usize {
    partition_of_key(root_key(root), n)
}

/// The partition among `n` of the root whose [`root_key`] is `key`.
#[inline]
pub fn partition_of_key(key: u64, n: usize) -> usize {
    let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 32) % n.max(1) as u64) as usize
}

/// A mutex's value, also after another thread panicked holding it.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Partition files being written.
pub struct Spill {
    dir: PathBuf,
    parts: Vec<Mutex<BufWriter<File>>>,
    /// Events in each partition, so that reading one back sizes its buffers once.
    counts: Vec<AtomicU64>,
    events: AtomicU64,
    bytes: AtomicU64,
    error: Mutex<Option<std::io::Error>>,
}

impl Spill {
    /// Creates `partitions` empty partition files in a new folder `dir`.
    pub fn create(dir: &Path, partitions: usize) -> Result<Spill> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let parts = (0..partitions.max(1))
            .map(|p| {
                let path = dir.join(format!("p{p:05}.bin"));
                let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
                Ok(Mutex::new(BufWriter::with_capacity(1 << 16, f)))
            })
            .collect::<Result<_>>()?;
        Ok(Spill {
            dir: dir.to_path_buf(),
            counts: (0..partitions.max(1)).map(|_| AtomicU64::new(0)).collect(),
            parts,
            events: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            error: Mutex::new(None),
        })
    }

    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// Appends (and drains) events to their partitions. A write error is kept and
    /// reported by [`Spill::finish`].
    pub fn push(&self, events: &mut Vec<Event>) {
        let mut batch = SpillBatch::new(self);
        for ev in events.drain(..) {
            batch.event(&ev);
        }
        batch.write();
    }

    /// Writes one partition's records (whole records, `count` of them).
    fn write(&self, p: usize, records: &[u8], count: u64) {
        self.counts[p].fetch_add(count, Ordering::Relaxed);
        self.events.fetch_add(count, Ordering::Relaxed);
        self.bytes
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        let mut w = lock(&self.parts[p]);
        if let Err(e) = w.write_all(records) {
            lock(&self.error).get_or_insert(e);
        }
    }

    /// Bytes written to the partition files so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Flushes the partition files; returns them.
    pub fn finish(self) -> Result<Vec<Spilled>> {
        if let Some(e) = lock(&self.error).take() {
            return Err(Error::io(&self.dir, e));
        }
        let mut parts = Vec::with_capacity(self.parts.len());
        for (p, (w, count)) in self.parts.into_iter().zip(self.counts).enumerate() {
            let mut w = w.into_inner().unwrap_or_else(|e| e.into_inner());
            w.flush().map_err(|e| Error::io(&self.dir, e))?;
            parts.push(Spilled {
                path: self.dir.join(format!("p{p:05}.bin")),
                events: count.into_inner(),
            });
        }
        Ok(parts)
    }
}

/// A partition file written, and how many events it holds.
#[derive(Debug, Clone)]
pub struct Spilled {
    pub path: PathBuf,
    pub events: u64,
}

fn put_str(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// What a spill record holds of an event.
struct Record<'a> {
    seq: u64,
    ts: i64,
    file: u32,
    line: u64,
    index: [u8; INDEX_BYTES],
    root: &'a str,
    session: &'a str,
    turn: Option<&'a str>,
    /// The kind of `kind`: a listed type is spilled as its kind's byte alone.
    k: Kind,
    kind: &'a str,
    data: &'a str,
}

/// The length mark of an absent string (a turn).
const ABSENT: u32 = u32::MAX;
/// The length mark of a session named like its root (an agent's own session: most events).
const SAME_AS_ROOT: u32 = u32::MAX - 1;

/// The spill record of one event: fixed fields, the kind's byte, then length-prefixed
/// strings (root, session, turn, the type's name for an unlisted type only, data). A
/// session named like the root and a listed type are not spilled as text: they were a
/// tenth of the bytes written and read back, and a look-up each when read back.
fn encode(r: &Record, out: &mut Vec<u8>) {
    out.extend_from_slice(&r.seq.to_le_bytes());
    out.extend_from_slice(&r.ts.to_le_bytes());
    out.extend_from_slice(&r.file.to_le_bytes());
    out.extend_from_slice(&r.line.to_le_bytes());
    out.extend_from_slice(&r.index);
    out.push(r.k as u8);
    put_str(r.root, out);
    if r.session == r.root {
        out.extend_from_slice(&SAME_AS_ROOT.to_le_bytes());
    } else {
        put_str(r.session, out);
    }
    match r.turn {
        Some(t) => put_str(t, out),
        None => out.extend_from_slice(&ABSENT.to_le_bytes()),
    }
    if r.k == Kind::Other {
        put_str(r.kind, out);
    }
    put_str(r.data, out);
}

/// One reader's spill records on their way to the partition files: a buffer per
/// partition, written out every [`SPILL_BATCH`] events and at the end ([`SpillBatch::write`]),
/// and kept (empty) for the next batch. A decoded line is encoded straight from its
/// envelope: no event is made for it, so its ids are not looked up among the file's shared
/// ones nor its payload copied, only to be dropped again once written (on a 2 GB log,
/// making those events was 7 % of a spilled ingest's samples and dropping them 2 %).
pub struct SpillBatch<'s> {
    spill: &'s Spill,
    bufs: Vec<Vec<u8>>,
    counts: Vec<u64>,
    events: usize,
}

impl<'s> SpillBatch<'s> {
    pub fn new(spill: &'s Spill) -> Self {
        let n = spill.parts.len();
        SpillBatch {
            spill,
            bufs: vec![Vec::new(); n],
            counts: vec![0; n],
            events: 0,
        }
    }

    /// The partition of events of `root`.
    pub fn partition(&self, root: &str) -> usize {
        partition_of(root.as_bytes(), self.bufs.len())
    }

    /// The partition of events of the root whose [`root_key`] is `key`.
    pub fn partition_of_key(&self, key: u64) -> usize {
        partition_of_key(key, self.bufs.len())
    }

    /// A canonical line's event, from its envelope.
    pub fn envelope(&mut self, env: &Envelope, file: u32, line: u64) {
        let k = Kind::of(env.kind);
        let index = PayloadIndex::of_members(k, env.data, &env.members);
        self.record(&Record {
            seq: env.seq,
            ts: env.ts,
            file,
            line,
            index: index.to_bytes(),
            root: env.root,
            session: env.session,
            turn: env.turn,
            k,
            kind: env.kind,
            data: env.data,
        });
    }

    /// An event already made (by the general decoder, or an importer).
    pub fn event(&mut self, ev: &Event) {
        self.record(&Record {
            seq: ev.seq,
            ts: ev.ts,
            file: ev.file,
            line: ev.line,
            index: ev.index.to_bytes(),
            root: &ev.root,
            session: &ev.session,
            turn: ev.turn.as_deref(),
            k: Kind::of(&ev.kind),
            kind: &ev.kind,
            data: &ev.data,
        });
    }

    fn record(&mut self, r: &Record) {
        let p = self.partition(r.root);
        encode(r, &mut self.bufs[p]);
        self.counts[p] += 1;
        self.events += 1;
        if self.events >= SPILL_BATCH {
            self.write();
        }
    }

    /// Writes the records held to their partitions.
    pub fn write(&mut self) {
        for (p, (buf, count)) in self.bufs.iter_mut().zip(&mut self.counts).enumerate() {
            if !buf.is_empty() {
                self.spill.write(p, buf, *count);
                buf.clear();
                *count = 0;
            }
        }
        self.events = 0;
    }
}

struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    /// A length-prefixed string, or the mark in its place: `Err(mark)`.
    fn str_or_mark(&mut self) -> Option<Result<&'a str, u32>> {
        let len = self.u32()?;
        if len == ABSENT || len == SAME_AS_ROOT {
            return Some(Err(len));
        }
        crate::decode::text(self.take(len as usize)?).map(Ok)
    }
    /// A length-prefixed string (no mark).
    fn str(&mut self) -> Option<&'a str> {
        self.str_or_mark()?.ok()
    }
}

/// Bytes a partition is read back in at a time (a record longer than this is read whole).
const READ_BYTES: usize = 1 << 20;

/// Bytes of a spill record before its strings (see [`encode`]); the kind's byte is last.
const FIXED: usize = 8 + 8 + 4 + 8 + INDEX_BYTES + 1;

/// The length of the spill record at the start of `b`, if all of it is there.
fn record_len(b: &[u8]) -> Option<usize> {
    let strings = if *b.get(FIXED - 1)? == Kind::Other as u8 {
        5
    } else {
        4
    };
    let mut at = FIXED;
    for _ in 0..strings {
        let len = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len != ABSENT && len != SAME_AS_ROOT {
            at += len as usize;
        }
    }
    (at <= b.len()).then_some(at)
}

/// Reads a partition file back, [`READ_BYTES`] at a time through `buf` (a thread's, reused
/// from one partition to the next: a fresh buffer of the whole file for every partition
/// was a third of a spilled ingest's page faults), as one buffer of events per root in
/// order of first appearance, each root's in spill order (so that assembly moves every
/// buffer whole). Ids are shared as the reader shares them (one [`crate::event::Id`] per
/// root, session, turn and type), and each event's payload index is the one spilled with
/// it: reading back neither copies an id per event nor walks the payloads again.
pub fn read_partition(part: &Spilled, buf: &mut Vec<u8>) -> Result<Vec<Vec<Event>>> {
    let path = &part.path;
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    buf.clear();
    let mut ids = Ids::default();
    // Root → its shared id (the partition's own: no other ids are looked up by a root's
    // text) and its buffer, with the last root's at hand (runs of one root's records).
    let mut group_of: HashMap<Id, usize, foldhash::fast::RandomState> = HashMap::default();
    let mut groups: Vec<Vec<Event>> = Vec::new();
    let mut last: Option<(Id, usize)> = None;
    let per_root = |groups: &[Vec<Event>]| -> usize {
        (part.events as usize / groups.len().max(1)).clamp(16, 4096)
    };
    let corrupt = || Error::Invalid(format!("{}: corrupt spill partition", path.display()));
    let mut at = 0;
    loop {
        while let Some(len) = record_len(&buf[at..]) {
            let mut c = Cursor {
                b: &buf[at..at + len],
            };
            at += len;
            let (ev, g) = (|| {
                let seq = c.u64()?;
                let ts = c.u64()? as i64;
                let file = c.u32()?;
                let line = c.u64()?;
                let index: [u8; INDEX_BYTES] = c.take(INDEX_BYTES)?.try_into().ok()?;
                let k = Kind::from_u8(c.u8()?)?;
                let root = c.str()?;
                let session = match c.str_or_mark()? {
                    Ok(s) => Some(s),
                    Err(SAME_AS_ROOT) => None,
                    Err(_) => return None,
                };
                let turn = match c.str_or_mark()? {
                    Ok(t) => Some(t),
                    Err(ABSENT) => None,
                    Err(_) => return None,
                };
                let other = if k == Kind::Other {
                    Some(c.str()?)
                } else {
                    None
                };
                let data = ids.data(c.str()?);
                let (root, g) = match &last {
                    Some((id, g)) if crate::event::same_bytes(id.as_bytes(), root.as_bytes()) => {
                        (id.clone(), *g)
                    }
                    _ => match group_of.get_key_value(root) {
                        Some((id, &g)) => (id.clone(), g),
                        None => {
                            let id = Id::from(root);
                            groups.push(Vec::with_capacity(per_root(&groups)));
                            group_of.insert(id.clone(), groups.len() - 1);
                            (id, groups.len() - 1)
                        }
                    },
                };
                last = Some((root.clone(), g));
                let session = match session {
                    Some(s) => ids.spilled_session(s),
                    None => root.clone(),
                };
                let turn = turn.map(|t| ids.spilled_turn(t));
                let kind = ids.spilled_kind(k, other);
                let index = PayloadIndex::from_bytes(k, &index);
                Some((
                    Event {
                        seq,
                        ts,
                        root,
                        session,
                        turn,
                        kind,
                        data,
                        file,
                        line,
                        index,
                    },
                    g,
                ))
            })()
            .ok_or_else(corrupt)?;
            groups[g].push(ev);
        }
        // The rest of the file after the records read: a record cut by the last read.
        buf.drain(..at);
        at = 0;
        let want = READ_BYTES.max(buf.len());
        let read = (&mut f)
            .take(want as u64)
            .read_to_end(buf)
            .map_err(|e| Error::io(path, e))?;
        if read == 0 {
            if !buf.is_empty() {
                return Err(corrupt());
            }
            return Ok(groups);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spill_records_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::create(&dir.path().join("s"), 3).unwrap();
        let ev = |root: &str, turn: Option<&str>| Event {
            seq: 7,
            ts: -5,
            root: root.into(),
            session: "s".into(),
            turn: turn.map(Into::into),
            kind: "turn/end".into(),
            data: "{\"a\":\"ü\"}".into(),
            file: 2,
            line: 9,
            index: PayloadIndex::of("turn/end", "{\"a\":\"ü\"}"),
        };
        // Seven roots, their events interleaved as in a rotated log; sessions named like
        // their root or not, listed and unlisted types (spilled as a byte, or by name).
        let kinds = ["turn/end", "x.custom", "agent/idle", "", "tool/call"];
        let input: Vec<Event> = (0..50)
            .map(|i| {
                let root = format!("r{}", i % 7);
                let kind = kinds[i as usize % kinds.len()];
                Event {
                    line: i,
                    session: if i % 3 == 0 {
                        "s".into()
                    } else {
                        root.as_str().into()
                    },
                    kind: kind.into(),
                    index: PayloadIndex::of(kind, "{\"a\":\"ü\"}"),
                    ..ev(&root, (i % 2 == 0).then_some("t"))
                }
            })
            .collect();
        let mut buf = input.clone();
        spill.push(&mut buf);
        assert!(buf.is_empty());
        let parts = spill.finish().unwrap();
        let mut buf = Vec::new();
        let mut back: Vec<Event> = parts
            .iter()
            .flat_map(|p| read_partition(p, &mut buf).unwrap().concat())
            .collect();
        back.sort_by(|a, b| (&a.root, a.line).cmp(&(&b.root, b.line)));
        let mut want = input;
        want.sort_by(|a, b| (&a.root, a.line).cmp(&(&b.root, b.line)));
        assert_eq!(back, want);
        // Every root in exactly the partition its hash names.
        for (p, part) in parts.iter().enumerate() {
            let groups = read_partition(part, &mut buf).unwrap();
            assert_eq!(
                part.events,
                groups.iter().map(Vec::len).sum::<usize>() as u64
            );
            for g in groups {
                // One buffer per root, in spill order.
                assert!(g.iter().all(|e| e.root == g[0].root));
                assert!(g.windows(2).all(|w| w[0].line < w[1].line));
                assert_eq!(partition_of(g[0].root.as_bytes(), 3), p);
            }
        }
    }

    #[test]
    fn records_cut_by_the_reads_and_longer_than_a_read_come_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::create(&dir.path().join("s"), 1).unwrap();
        // Payloads of 0.1 to 3 MB: records straddle every read and one spans three.
        let sizes = [100_000, 333_333, 3 << 20, 7, 250_001, 1 << 20, 999_999, 12];
        let input: Vec<Event> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let data = format!("{{\"t\":\"{}ü\"}}", "x".repeat(n));
                Event {
                    seq: i as u64,
                    ts: 0,
                    root: format!("r{}", i % 3).into(),
                    session: "s".into(),
                    turn: None,
                    kind: "note/long".into(),
                    index: PayloadIndex::of("note/long", &data),
                    data: data.as_str().into(),
                    file: 0,
                    line: i as u64 + 1,
                }
            })
            .collect();
        spill.push(&mut input.clone());
        let parts = spill.finish().unwrap();
        let mut back = read_partition(&parts[0], &mut Vec::new()).unwrap().concat();
        back.sort_by_key(|e| e.seq);
        assert_eq!(back, input);
    }

    #[test]
    fn a_cut_partition_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::create(&dir.path().join("s"), 1).unwrap();
        let mut evs = vec![Event {
            seq: 1,
            ts: 0,
            root: "r".into(),
            session: "r".into(),
            turn: None,
            kind: "k".into(),
            data: "{}".into(),
            file: 0,
            line: 1,
            index: PayloadIndex::NONE,
        }];
        spill.push(&mut evs);
        let parts = spill.finish().unwrap();
        let bytes = std::fs::read(&parts[0].path).unwrap();
        std::fs::write(&parts[0].path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(read_partition(&parts[0], &mut Vec::new()).is_err());
    }
}
