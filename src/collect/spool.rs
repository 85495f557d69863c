//! The spool: the folder `_collect/` inside the warehouse where accepted requests are
//! written, as OTLP JSON lines (`otlp.jsonl`, see `lines.rs`), before the commit that
//! ingests them. It is the receiver's durable state: a batch's lines are synced before its
//! commit runs, and on start whatever the spool holds that the warehouse has not committed
//! is committed first, so a receiver killed at any moment loses nothing it acknowledged.
//!
//! It also remembers the key of every record it holds, so that a request sent again (an
//! exporter retrying after a timeout, or after the receiver was killed before answering)
//! adds only the records the spool does not have yet.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::groups::Groups;
use super::lines::{self, Key, Links, Prepared};
use runlog_core::fingerprint::{Scan, Scanner};
use runlog_core::import::otlp::Ahead;
use runlog_core::ingest;

/// The spool folder of a warehouse.
pub const SPOOL_DIR: &str = "_collect";

/// The spool of one receiver.
pub struct Spool {
    dir: PathBuf,
    /// The spool file, once opened for writing.
    file: Option<File>,
    /// Whether it was written since the last [`Spool::sync`].
    dirty: bool,
    keys: HashSet<Key>,
    /// Each line's offset and length (without its newline).
    positions: Vec<(u64, u32)>,
    /// The file's size.
    size: u64,
    /// The file's fingerprint scan, kept as lines are written (not read again per commit).
    scanner: Scanner,
    /// The agents' groups of the records, and their lines.
    pub groups: Groups,
    /// Lines written since the last [`Spool::take_ahead`] as the importer reads them, by
    /// line (0-based): a commit maps them without reading them back.
    ahead: HashMap<u32, Ahead>,
    /// The spool file as an ingest of the spool folder names it.
    input: ingest::Input,
}

/// A spool line for a commit's mapping.
pub enum Line {
    /// Its bytes, read back.
    Text(Vec<u8>),
    /// What the importer reads it as, kept from its request.
    Ahead(Ahead),
}

/// An I/O failure on a spool file.
#[derive(Debug, thiserror::Error)]
#[error("spool {path}: {source}")]
pub struct SpoolError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> SpoolError + '_ {
    move |source| SpoolError {
        path: path.to_path_buf(),
        source,
    }
}

impl Spool {
    /// Opens the spool in `dir` (created when missing): a last line cut short by a kill
    /// (its request was never answered) is cut off, and the keys of every record are read.
    pub fn open(dir: &Path) -> Result<Spool, SpoolError> {
        fs::create_dir_all(dir).map_err(at(dir))?;
        let path = file_path(dir);
        let mut spool = Spool {
            dir: dir.to_path_buf(),
            file: None,
            dirty: false,
            keys: HashSet::new(),
            positions: Vec::new(),
            size: 0,
            scanner: Scanner::default(),
            groups: Groups::default(),
            ahead: HashMap::new(),
            input: ingest::Input {
                name: path.display().to_string(),
                rel: ingest::relative_name(&path, &[dir.to_path_buf()]),
                path: path.clone(),
            },
        };
        if path.exists() {
            cut_torn_tail(&path).map_err(at(&path))?;
            let mut r = BufReader::new(File::open(&path).map_err(at(&path))?);
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = r.read_until(b'\n', &mut line).map_err(at(&path))?;
                if n == 0 {
                    break;
                }
                spool.scanner.feed(&line);
                let links = match lines::parse_line(&line) {
                    Some(e) => {
                        spool.keys.extend(lines::keys(&e));
                        lines::links(&e)
                    }
                    None => Links::default(),
                };
                spool.note_line(n as u64 - 1, &links);
            }
        }
        Ok(spool)
    }

    /// Notes a line written at the end of the file (`len` bytes without its newline).
    fn note_line(&mut self, len: u64, links: &Links) {
        let idx = self.positions.len() as u32;
        self.positions.push((self.size, len as u32));
        self.size += len + 1;
        self.groups.add(idx, links, &self.input.rel);
    }

    /// The spool file as an ingest names it.
    pub fn input(&self) -> &ingest::Input {
        &self.input
    }

    /// Lines in the file.
    pub fn lines(&self) -> u64 {
        self.positions.len() as u64
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// What [`runlog_core::fingerprint::scan`] of the file gives, kept as it was written.
    pub fn scan(&self) -> Scan {
        self.scanner.scan()
    }

    /// The lines written since the last call, as the importer reads them ([`Line::Ahead`]).
    pub fn take_ahead(&mut self) -> HashMap<u32, Ahead> {
        std::mem::take(&mut self.ahead)
    }

    /// The lines `idx` (0-based, ascending) one at a time: (1-based line number, the line);
    /// those of `ahead` as the importer reads them, the others read back.
    pub fn read_lines<'a>(
        &'a self,
        idx: &'a [u32],
        mut ahead: HashMap<u32, Ahead>,
    ) -> Result<impl Iterator<Item = Result<(u64, Line), SpoolError>> + 'a, SpoolError> {
        use std::os::unix::fs::FileExt;
        let path = &self.input.path;
        let f = match idx.iter().all(|i| ahead.contains_key(i)) {
            true => None,
            false => Some(File::open(path).map_err(at(path))?),
        };
        Ok(idx.iter().map(move |&i| {
            if let Some(a) = ahead.remove(&i) {
                return Ok((u64::from(i) + 1, Line::Ahead(a)));
            }
            let (off, len) = self.positions[i as usize];
            let mut buf = vec![0u8; len as usize];
            if let Some(f) = &f {
                f.read_exact_at(&mut buf, off).map_err(at(path))?;
            }
            Ok((u64::from(i) + 1, Line::Text(buf)))
        }))
    }

    /// The spool folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The spool files that exist (0 or 1).
    pub fn files(&self) -> usize {
        usize::from(file_path(&self.dir).exists())
    }

    /// The records the spool holds.
    pub fn records(&self) -> usize {
        self.keys.len()
    }

    /// Writes the records of a request the spool does not hold yet (`prepared`: its
    /// [`lines::prepare`]); returns how many that was. Not durable before [`Spool::sync`].
    pub fn write(&mut self, prepared: Prepared) -> Result<u64, SpoolError> {
        let Prepared {
            keys,
            links,
            line,
            ahead,
        } = prepared;
        if keys.is_empty() {
            return Ok(0);
        }
        // The common case: no record is known; otherwise only the new ones are written.
        let mut added = Vec::with_capacity(keys.len());
        let mut all_new = true;
        for k in &keys {
            if self.keys.insert(*k) {
                added.push(*k);
            } else {
                all_new = false;
                break;
            }
        }
        let (count, line, links, ahead) = if all_new {
            (keys.len() as u64, line, links, ahead)
        } else {
            for k in &added {
                self.keys.remove(k);
            }
            // The request read back from its line, its records held already taken out; the
            // commit reads the new line back.
            let Some(mut export) = lines::parse_line(line.as_bytes()) else {
                return Err(SpoolError {
                    path: self.dir.clone(),
                    source: io::Error::other("a request's spool line does not read back"),
                });
            };
            // Each record by the key its request had (a log record's encoding after the
            // JSON round trip could differ from the one received).
            let (mut count, mut i) = (0u64, 0usize);
            lines::retain(&mut export, |k| {
                let new = self.keys.insert(keys.get(i).copied().unwrap_or(k));
                i += 1;
                count += u64::from(new);
                new
            });
            if count == 0 {
                return Ok(0);
            }
            let line = lines::line(&export).map_err(|e| SpoolError {
                path: self.dir.clone(),
                source: io::Error::other(e),
            })?;
            (count, line, lines::links(&export), None)
        };
        self.append(line.as_bytes())?;
        if let Some(a) = ahead {
            self.ahead.insert(self.positions.len() as u32, a);
        }
        self.note_line(line.len() as u64, &links);
        Ok(count)
    }

    fn append(&mut self, line: &[u8]) -> Result<(), SpoolError> {
        let path = file_path(&self.dir);
        if self.file.is_none() {
            let existed = path.exists();
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(at(&path))?;
            if !existed {
                // The new name is durable with the folder's entry.
                File::open(&self.dir)
                    .and_then(|d| d.sync_all())
                    .map_err(at(&self.dir))?;
            }
            self.file = Some(f);
        }
        let f = self.file.as_mut().expect("opened above");
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        f.write_all(&buf).map_err(at(&path))?;
        self.scanner.feed(&buf);
        self.dirty = true;
        Ok(())
    }

    /// Makes every line written so far durable.
    pub fn sync(&mut self) -> Result<(), SpoolError> {
        if let (true, Some(f)) = (self.dirty, &self.file) {
            f.sync_data().map_err(at(&file_path(&self.dir)))?;
            self.dirty = false;
        }
        Ok(())
    }
}

/// The spool's lock, held while a receiver runs (released when dropped, or when its
/// process ends however it ends).
pub struct Lock {
    _file: File,
}

/// Takes the lock of the spool in `dir` (`None`: another receiver holds it): the file
/// `<dir>.lock` beside the folder, whose files are all read as inputs.
pub fn lock(dir: &Path) -> Result<Option<Lock>, SpoolError> {
    fs::create_dir_all(dir).map_err(at(dir))?;
    let path = dir.with_extension("lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(at(&path))?;
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock is called on a descriptor this function owns and keeps open; it
        // reads no memory of ours.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(SpoolError { path, source: e });
        }
    }
    Ok(Some(Lock { _file: file }))
}

fn file_path(dir: &Path) -> PathBuf {
    dir.join("otlp.jsonl")
}

/// Cuts a file after its last newline (a line written in part by a receiver that was
/// killed while writing it).
fn cut_torn_tail(path: &Path) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = OpenOptions::new().read(true).write(true).open(path)?;
    let len = f.metadata()?.len();
    let mut end = len;
    let mut chunk = vec![0u8; 64 << 10];
    // Backwards, a chunk at a time, to the last newline.
    let keep = loop {
        if end == 0 {
            break 0;
        }
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(part)?;
        if end == len && part.last() == Some(&b'\n') {
            return Ok(());
        }
        if let Some(i) = part.iter().rposition(|&b| b == b'\n') {
            break start + i as u64 + 1;
        }
        end = start;
    };
    f.set_len(keep)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::decode::Export;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn export(ids: &[u8]) -> Export {
        Export::Traces(ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: ids
                        .iter()
                        .map(|&i| Span {
                            trace_id: vec![i; 16],
                            span_id: vec![i; 8],
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        })
    }

    fn write(spool: &mut Spool, ids: &[u8]) -> u64 {
        let p = lines::prepare(export(ids)).unwrap();
        spool.write(p).unwrap()
    }

    #[test]
    fn records_already_held_are_not_written_again_even_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("spool");
        let mut s = Spool::open(&d).unwrap();
        assert_eq!(write(&mut s, &[1, 2, 3]), 3);
        assert_eq!(write(&mut s, &[3, 4, 4]), 1, "3 was held, 4 is sent twice");
        s.sync().unwrap();
        drop(s);
        // A line cut short by a kill: cut off on open, its records not held.
        let torn = file_path(&d);
        let whole = fs::read(&torn).unwrap_or_default();
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&torn)
            .unwrap();
        f.write_all(b"{\"resourceSpans\":[{\"scopeSp").unwrap();
        drop(f);
        let mut s = Spool::open(&d).unwrap();
        assert_eq!(s.records(), 4);
        assert_eq!(fs::read(&torn).unwrap(), whole);
        assert_eq!(write(&mut s, &[1, 2, 3, 4]), 0);
        assert_eq!(write(&mut s, &[5]), 1);
        s.sync().unwrap();
        let file = runlog_core::fingerprint::scan(&torn, None).unwrap();
        assert_eq!(s.scan(), file, "the scan kept as written is the file's");
    }
}
