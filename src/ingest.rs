//! Ingest: find the log files, read them as streams (plain, gzip or zstd), validate each
//! line's envelope (EVENTS.md) and turn it into an [`Event`] or a [`Reject`], then group
//! the events by agent (`root`), order them by `seq` and drop duplicates (SEMANTICS.md §1, §7).
//!
//! Nothing is lost: every non-blank line read ends up kept, a duplicate, or a reject.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use crate::decode::{excerpt, mask_secrets, parse_line, parse_ts, EXCERPT_BYTES, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::event::Event;

/// Default longest line accepted (SEMANTICS.md §7).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How ingest reads its input.
#[derive(Clone)]
pub struct IngestOptions {
    pub max_line_bytes: usize,
    /// Called with the number of compressed bytes read so far, from any thread.
    pub progress: Option<std::sync::Arc<dyn Fn(u64) + Send + Sync>>,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            progress: None,
        }
    }
}

impl std::fmt::Debug for IngestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestOptions")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// A line that could not be kept: where it is, why, and its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    pub file: String,
    pub line: u64,
    pub reason: String,
    pub excerpt: String,
}

/// The accounting of one input file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct FileSummary {
    pub file: String,
    pub bytes: u64,
    /// Non-blank lines read.
    pub lines: u64,
    pub blank: u64,
    pub kept: u64,
    pub duplicates: u64,
    pub rejects: u64,
}

/// All events of one agent (one `root`), in `seq` order, duplicates removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub root: String,
    pub events: Vec<Event>,
}

/// What ingest produced: agents in `root` order, rejects in (file, line) order.
#[derive(Debug, Default)]
pub struct Ingested {
    pub files: Vec<FileSummary>,
    /// Files inside folders skipped because of their name.
    pub skipped_files: Vec<String>,
    pub agents: Vec<Agent>,
    pub rejects: Vec<Reject>,
}

impl Ingested {
    pub fn totals(&self) -> FileSummary {
        let mut t = FileSummary {
            file: "(all)".into(),
            ..Default::default()
        };
        for f in &self.files {
            t.bytes += f.bytes;
            t.lines += f.lines;
            t.blank += f.blank;
            t.kept += f.kept;
            t.duplicates += f.duplicates;
            t.rejects += f.rejects;
        }
        t
    }

    /// Names of the input files, indexed by `Event::file`.
    pub fn file_names(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.file.as_str()).collect()
    }
}

/// Whether a file found inside a folder is a log by its name.
pub fn is_log_name(name: &str) -> bool {
    let base = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zst"))
        .unwrap_or(name);
    base.ends_with(".jsonl") || base.ends_with(".ndjson")
}

/// Expands the command-line paths into the files to read, sorted by path bytes.
/// Returns the files and the files skipped inside folders.
pub fn discover(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Error::NotFound(p.clone())
            } else {
                Error::io(p, e)
            }
        })?;
        if meta.is_dir() {
            walk(p, &mut files, &mut skipped)?;
        } else {
            files.push(p.clone());
        }
    }
    files.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    files.dedup();
    skipped.sort();
    Ok((files, skipped))
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_dir() {
            walk(&path, files, skipped)?;
        } else if is_log_name(&entry.file_name().to_string_lossy()) {
            files.push(path);
        } else {
            skipped.push(path);
        }
    }
    Ok(())
}

/// Ingests files and folders: discover, read in parallel, group, order, deduplicate.
pub fn ingest_paths(paths: &[PathBuf], opts: &IngestOptions) -> Result<Ingested> {
    let (files, skipped) = discover(paths)?;
    let mut ing = ingest_files(&files, opts)?;
    ing.skipped_files = skipped.iter().map(|p| p.display().to_string()).collect();
    Ok(ing)
}

/// Reads the given files (already in the order that decides conflicts) and assembles agents.
pub fn ingest_files(files: &[PathBuf], opts: &IngestOptions) -> Result<Ingested> {
    let parsed: Vec<FileRead> = files
        .par_iter()
        .enumerate()
        .map(|(i, p)| {
            let f = File::open(p).map_err(|e| Error::io(p, e))?;
            read_stream(i as u32, &p.display().to_string(), f, opts)
        })
        .collect::<Result<_>>()?;
    let mut ing = assemble(parsed);
    excerpt_conflicts(files, &mut ing, opts);
    Ok(ing)
}

/// A conflicting line (§1) is found only after every file is read: its excerpt, like any
/// reject's, is the first bytes of the line itself, so the files holding such lines are
/// read again (conflicts are rare) to fetch them. Where a file cannot be read again, the
/// stand-in excerpt made by [`assemble`] stays.
fn excerpt_conflicts(files: &[PathBuf], ing: &mut Ingested, opts: &IngestOptions) {
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
    for p in files {
        let name = p.display().to_string();
        let Some(lines) = wanted.get(name.as_str()) else {
            continue;
        };
        if let Ok(ex) = line_excerpts(p, lines, opts.max_line_bytes) {
            found.extend(ex.into_iter().map(|(l, e)| ((name.clone(), l), e)));
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

/// The events and rejects read from one stream, before assembly.
#[derive(Debug, Default)]
pub struct FileRead {
    pub summary: FileSummary,
    pub events: Vec<Event>,
    pub rejects: Vec<Reject>,
}

struct CountingReader<R> {
    inner: R,
    count: u64,
    reported: u64,
    progress: Option<std::sync::Arc<dyn Fn(u64) + Send + Sync>>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        if let Some(p) = &self.progress {
            if self.count - self.reported >= 1 << 20 || n == 0 {
                p(self.count - self.reported);
                self.reported = self.count;
            }
        }
        Ok(n)
    }
}

/// Reads one stream: detects gzip/zstd by magic bytes, splits lines, parses envelopes.
pub fn read_stream<R: Read>(
    file_idx: u32,
    name: &str,
    raw: R,
    opts: &IngestOptions,
) -> Result<FileRead> {
    let mut counting = BufReader::with_capacity(
        1 << 16,
        CountingReader {
            inner: raw,
            count: 0,
            reported: 0,
            progress: opts.progress.clone(),
        },
    );
    let head = counting.fill_buf().map_err(|e| Error::io(name, e))?;
    let compression = if head.starts_with(&[0x1f, 0x8b]) {
        "gzip"
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        "zstd"
    } else {
        "plain"
    };
    let mut out = FileRead::default();
    out.summary.file = name.to_string();
    out.summary.bytes = match compression {
        "gzip" => {
            let mut r =
                BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(counting));
            read_lines(file_idx, name, &mut r, opts, &mut out, compression);
            r.get_ref().get_ref().get_ref().count
        }
        "zstd" => {
            let dec = zstd::stream::read::Decoder::with_buffer(counting)
                .map_err(|e| Error::io(name, e))?;
            let mut r = BufReader::with_capacity(1 << 16, dec);
            read_lines(file_idx, name, &mut r, opts, &mut out, compression);
            r.get_ref().get_ref().get_ref().count
        }
        _ => {
            read_lines(file_idx, name, &mut counting, opts, &mut out, compression);
            counting.get_ref().count
        }
    };
    Ok(out)
}

/// Outcome of reading one line.
enum LineRead {
    /// A whole line is in the buffer (without its line end).
    Line,
    /// The line was longer than the limit: its first bytes are in the buffer, the rest was skipped.
    TooLong(u64),
    /// End of stream.
    Eof,
}

/// Reads the next line into `buf` (cleared first), holding at most `max` bytes of it.
fn next_line<R: BufRead>(r: &mut R, buf: &mut Vec<u8>, max: usize) -> io::Result<LineRead> {
    buf.clear();
    let mut total: u64 = 0;
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            if !any {
                return Ok(LineRead::Eof);
            }
            break;
        }
        any = true;
        let (chunk, found) = match memchr(avail) {
            Some(i) => (&avail[..i], Some(i)),
            None => (avail, None),
        };
        let room = (max + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        total += chunk.len() as u64;
        let used = found.map_or(chunk.len(), |i| i + 1);
        r.consume(used);
        if found.is_some() {
            break;
        }
    }
    if total > max as u64 {
        buf.truncate(EXCERPT_BYTES);
        return Ok(LineRead::TooLong(total));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(LineRead::Line)
}

#[inline]
fn memchr(s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == b'\n')
}

fn read_lines<R: BufRead>(
    file_idx: u32,
    name: &str,
    r: &mut R,
    opts: &IngestOptions,
    out: &mut FileRead,
    compression: &str,
) {
    let mut buf = Vec::with_capacity(4096);
    let mut line_no: u64 = 0;
    loop {
        let res = next_line(r, &mut buf, opts.max_line_bytes);
        match res {
            Ok(LineRead::Eof) => break,
            Ok(LineRead::TooLong(len)) => {
                line_no += 1;
                out.summary.lines += 1;
                out.summary.rejects += 1;
                out.rejects.push(Reject {
                    file: name.to_string(),
                    line: line_no,
                    reason: format!(
                        "line is {len} bytes, longer than the limit of {} bytes",
                        opts.max_line_bytes
                    ),
                    excerpt: excerpt(&buf),
                });
            }
            Ok(LineRead::Line) => {
                line_no += 1;
                let mut line: &[u8] = &buf;
                if line_no == 1 && line.starts_with(b"\xEF\xBB\xBF") {
                    line = &line[3..];
                }
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    out.summary.blank += 1;
                    continue;
                }
                out.summary.lines += 1;
                match parse_line(line) {
                    Ok(mut ev) => {
                        ev.file = file_idx;
                        ev.line = line_no;
                        out.events.push(ev);
                    }
                    Err(reason) => {
                        out.summary.rejects += 1;
                        out.rejects.push(Reject {
                            file: name.to_string(),
                            line: line_no,
                            reason,
                            excerpt: excerpt(line),
                        });
                    }
                }
            }
            Err(e) => {
                // A broken compressed stream (or a read error): what was read before stays,
                // the break itself is recorded as a reject.
                line_no += 1;
                out.summary.lines += 1;
                out.summary.rejects += 1;
                out.rejects.push(Reject {
                    file: name.to_string(),
                    line: line_no,
                    reason: format!("{compression} stream broken: {e}"),
                    excerpt: excerpt(&buf),
                });
                break;
            }
        }
    }
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
const CONFLICT_REASON: &str = "conflicts with the event kept from";

/// Groups the files' events by root, orders each agent by seq, and resolves duplicates:
/// equal content is one event; different content keeps the first in (file, line) order.
pub fn assemble(reads: Vec<FileRead>) -> Ingested {
    let mut files = Vec::with_capacity(reads.len());
    let mut rejects = Vec::new();
    let mut by_root: HashMap<String, Vec<Event>, ahash::RandomState> = HashMap::default();
    for fr in reads {
        files.push(fr.summary);
        rejects.extend(fr.rejects);
        for ev in fr.events {
            match by_root.get_mut(&ev.root) {
                Some(v) => v.push(ev),
                None => {
                    by_root.insert(ev.root.clone(), vec![ev]);
                }
            }
        }
    }
    let names: Vec<String> = files.iter().map(|f| f.file.clone()).collect();
    // Per agent: its kept events, its conflicts (with the file index), its duplicates' files.
    type Resolved = (Agent, Vec<(u32, Reject)>, Vec<u32>);
    let mut agents: Vec<Resolved> = by_root
        .into_par_iter()
        .map(|(root, mut evs)| {
            evs.sort_unstable_by_key(|e| (e.seq, e.file, e.line));
            let mut kept: Vec<Event> = Vec::with_capacity(evs.len());
            let mut rej = Vec::new();
            let mut dups = Vec::new();
            for ev in evs {
                if let Some(k) = kept.last() {
                    if k.seq == ev.seq {
                        if same_content(k, &ev) {
                            dups.push(ev.file);
                        } else {
                            rej.push((
                                ev.file,
                                Reject {
                                    file: names[ev.file as usize].clone(),
                                    line: ev.line,
                                    reason: format!(
                                        "{CONFLICT_REASON} {}:{} (same root {:?} and seq {}, different content)",
                                        names[k.file as usize], k.line, ev.root, ev.seq
                                    ),
                                    excerpt: mask_secrets(&format!(
                                        "{{\"seq\":{},\"root\":{:?},\"session\":{:?},\"type\":{:?},\"data\":{}}}",
                                        ev.seq, ev.root, ev.session, ev.kind, ev.data
                                    ))
                                    .chars()
                                    .take(EXCERPT_BYTES)
                                    .collect(),
                                },
                            ));
                        }
                        continue;
                    }
                }
                kept.push(ev);
            }
            (Agent { root, events: kept }, rej, dups)
        })
        .collect();
    agents.sort_unstable_by(|a, b| a.0.root.cmp(&b.0.root));
    let mut out_agents = Vec::with_capacity(agents.len());
    for (agent, rej, dups) in agents {
        for f in dups {
            files[f as usize].duplicates += 1;
        }
        for (f, r) in rej {
            files[f as usize].rejects += 1;
            rejects.push(r);
        }
        for ev in &agent.events {
            files[ev.file as usize].kept += 1;
        }
        out_agents.push(agent);
    }
    let order: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    rejects.sort_by(|a, b| {
        (order.get(a.file.as_str()), a.line).cmp(&(order.get(b.file.as_str()), b.line))
    });
    Ingested {
        files,
        skipped_files: Vec::new(),
        agents: out_agents,
        rejects,
    }
}
