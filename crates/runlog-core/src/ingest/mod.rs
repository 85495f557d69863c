//! Ingest: find the log files, read them as streams (plain, gzip or zstd), validate each
//! line's envelope (EVENTS.md) and turn it into an [`Event`] or a [`Reject`], then group
//! the events by agent (`root`), order them by `seq` and drop duplicates (SEMANTICS.md §1, §7).
//!
//! Nothing is lost: every non-blank line read ends up kept, a duplicate, or a reject.

pub mod spill;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use crate::decode::{excerpt, mask_secrets, parse_line, parse_ts, EXCERPT_BYTES, MAX_DEPTH};
use crate::decode::{parse_envelope_after, parse_line_general, Envelope, LastMinute};
use crate::error::{Error, Result};
use crate::event::{Event, Id, Kind, PayloadIndex};
use crate::import::{self, FileContext, Format};

/// Default longest line accepted (SEMANTICS.md §7).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How ingest reads its input.
#[derive(Clone)]
pub struct IngestOptions {
    pub max_line_bytes: usize,
    /// The format of the input files; `Auto` detects each file's from its first records.
    pub format: Format,
    /// Called with the number of compressed bytes read so far, from any thread.
    pub progress: Option<std::sync::Arc<dyn Fn(u64) + Send + Sync>>,
    /// Where canonical events go instead of memory (see [`crate::spill`]): called, from
    /// any thread, with a batch of a file's events to drain. Imported files are kept in
    /// memory (their roots are resolved across files first).
    pub spill: Option<EventSink>,
    /// Plain canonical files of at least twice this many bytes are read in pieces of about
    /// this size, in parallel (a piece starts at a line); 0 reads every file whole.
    pub split_bytes: u64,
}

/// Default [`IngestOptions::split_bytes`]: pieces small enough that two cores finish
/// together (one 52 MB file more or less left one core idle for 0.1 s), large enough that
/// an agent rarely spans two.
pub const DEFAULT_SPLIT_BYTES: u64 = 16 << 20;

/// A consumer of decoded events that takes them out of the given buffer.
pub type EventSink = std::sync::Arc<dyn Fn(&mut Vec<Event>) + Send + Sync>;

/// Events a reader holds before handing them to [`IngestOptions::spill`].
pub const SPILL_BATCH: usize = 8192;

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            format: Format::Auto,
            progress: None,
            spill: None,
            split_bytes: DEFAULT_SPLIT_BYTES,
        }
    }
}

impl std::fmt::Debug for IngestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestOptions")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("format", &self.format)
            .field("progress", &self.progress.is_some())
            .field("split_bytes", &self.split_bytes)
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
    /// The file's format (`runlog`, or the source an importer read).
    pub format: String,
    pub bytes: u64,
    /// Non-blank lines read.
    pub lines: u64,
    pub blank: u64,
    pub kept: u64,
    pub duplicates: u64,
    pub rejects: u64,
    /// Canonical events kept from the file (equal to `kept` for the canonical format; an
    /// imported line may yield several events, or none when it is folded into another).
    pub events: u64,
}

impl FileSummary {
    /// Adds another summary's counts (bytes, lines, ...) to these.
    pub fn add_counts(&mut self, other: &FileSummary) {
        self.bytes += other.bytes;
        self.lines += other.lines;
        self.blank += other.blank;
        self.kept += other.kept;
        self.duplicates += other.duplicates;
        self.rejects += other.rejects;
        self.events += other.events;
    }
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
            t.add_counts(f);
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
    let rels: Vec<String> = files.iter().map(|f| relative_name(f, paths)).collect();
    let mut ing = ingest_files_with(&files, &rels, opts)?;
    ing.skipped_files = skipped.iter().map(|p| p.display().to_string()).collect();
    Ok(ing)
}

/// A file's path relative to the command-line folder it was found under (for a file named
/// on the command line: its file name), with `/` separators. Importers use it in place of
/// missing or placeholder ids.
pub fn relative_name(file: &Path, args: &[PathBuf]) -> String {
    let rel = args
        .iter()
        .filter(|a| a.is_dir())
        .find_map(|a| file.strip_prefix(a).ok())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| file.file_name().map(PathBuf::from).unwrap_or_default());
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads the given files (already in the order that decides conflicts) and assembles agents.
pub fn ingest_files(files: &[PathBuf], opts: &IngestOptions) -> Result<Ingested> {
    let rels: Vec<String> = files.iter().map(|f| relative_name(f, &[])).collect();
    ingest_files_with(files, &rels, opts)
}

/// [`ingest_files`] with each file's relative name given (see [`relative_name`]).
pub fn ingest_files_with(
    files: &[PathBuf],
    rels: &[String],
    opts: &IngestOptions,
) -> Result<Ingested> {
    let pieces = split_files(files, opts)?;
    let mut read: Vec<(usize, FileRead)> = pieces
        .par_iter()
        .map(|piece| {
            let p = &files[piece.file];
            let name = p.display().to_string();
            let mut f = File::open(p).map_err(|e| Error::io(p, e))?;
            let at_file_start = piece.start == 0;
            // A later piece is of a file that reads as canonical (see `split_files`).
            let canonical;
            let opts = if at_file_start {
                opts
            } else {
                f.seek(SeekFrom::Start(piece.start))
                    .map_err(|e| Error::io(p, e))?;
                canonical = IngestOptions {
                    format: Format::Runlog,
                    ..opts.clone()
                };
                &canonical
            };
            let raw = f.take(piece.len.unwrap_or(u64::MAX));
            read_piece(
                piece.file as u32,
                &name,
                &rels[piece.file],
                raw,
                opts,
                at_file_start,
            )
            .map(|r| (piece.file, r))
        })
        .collect::<Result<_>>()?;
    // Line numbers of later pieces count from their piece's start: shift them by the lines
    // of the pieces before (in parallel: it touches every event of those pieces).
    let mut shifts = Vec::with_capacity(read.len());
    let mut before = 0u64;
    for (k, (file, r)) in read.iter().enumerate() {
        if k == 0 || read[k - 1].0 != *file {
            before = 0;
        }
        shifts.push(before);
        before += r.line_count;
    }
    read.par_iter_mut()
        .zip(&shifts)
        .filter(|(_, &shift)| shift > 0)
        .for_each(|((_, r), &shift)| {
            for ev in r.groups.iter_mut().flatten().chain(r.events.iter_mut()) {
                ev.line += shift;
            }
            for rej in &mut r.rejects {
                rej.line += shift;
            }
        });
    let mut parsed: Vec<FileRead> = Vec::with_capacity(files.len());
    let mut last_file = None;
    for (file, mut r) in read {
        match parsed.last_mut() {
            Some(whole) if last_file == Some(file) => {
                whole.summary.add_counts(&r.summary);
                whole.events.append(&mut r.events);
                whole.groups.append(&mut r.groups);
                whole.rejects.append(&mut r.rejects);
                whole.line_count += r.line_count;
            }
            _ => parsed.push(r),
        }
        last_file = Some(file);
    }
    let mut ing = assemble(parsed);
    excerpt_conflicts(files, &mut ing, opts);
    Ok(ing)
}

/// A part of an input file to read: from byte `start` (the start of a line), `len` bytes or
/// to the end.
struct Piece {
    file: usize,
    start: u64,
    len: Option<u64>,
}

/// The pieces to read the files in: a file whole, unless it is plain (not compressed), at
/// least twice [`IngestOptions::split_bytes`], and canonical (the format asked for, or,
/// under `auto`, what its first line is detected as), so that a piece can be read without
/// what came before it. Pieces of a file come in order; each starts just after a newline.
fn split_files(files: &[PathBuf], opts: &IngestOptions) -> Result<Vec<Piece>> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let whole = Piece {
            file: i,
            start: 0,
            len: None,
        };
        let step = opts.split_bytes;
        let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        if step == 0 || opts.spill.is_some() || size < step.saturating_mul(2) {
            out.push(whole);
            continue;
        }
        let Ok(mut f) = File::open(p) else {
            out.push(whole); // the reader reports it
            continue;
        };
        if !splittable(&mut f, opts.format) {
            out.push(whole);
            continue;
        }
        let mut start = 0u64;
        let mut at = step;
        while at + step <= size {
            // The piece ends just after the first newline at or after `at`.
            let Some(end) = next_line_start(&mut f, at).map_err(|e| Error::io(p, e))? else {
                break;
            };
            if end >= size {
                break;
            }
            out.push(Piece {
                file: i,
                start,
                len: Some(end - start),
            });
            start = end;
            at = end.max(at + step);
        }
        out.push(Piece {
            file: i,
            start,
            len: None,
        });
    }
    Ok(out)
}

/// Whether a file can be read in pieces: plain text whose first non-blank line is a
/// canonical event (or the canonical format was asked for).
fn splittable(f: &mut File, format: Format) -> bool {
    let mut head = Vec::new();
    if f.by_ref().take(1 << 16).read_to_end(&mut head).is_err() {
        return false;
    }
    if head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return false;
    }
    match format {
        Format::Runlog => true,
        Format::Auto => {
            let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head);
            // Only whole lines of the head (the last may be cut).
            let mut lines = text.split(|&b| b == b'\n');
            let _cut = lines.next_back();
            lines
                .find(|l| !l.iter().all(u8::is_ascii_whitespace))
                .is_some_and(|l| import::detect_record(l) == Some(Format::Runlog))
        }
        _ => false,
    }
}

/// The offset just after the first newline at or after `at`, or `None` at the end of the
/// file.
fn next_line_start(f: &mut File, at: u64) -> io::Result<Option<u64>> {
    f.seek(SeekFrom::Start(at))?;
    let mut buf = vec![0u8; 1 << 16];
    let mut pos = at;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(Some(pos + i as u64 + 1));
        }
        pos += n as u64;
    }
}

/// A conflicting line (§1) is found only after every file is read: its excerpt, like any
/// reject's, is the first bytes of the line itself, so the files holding such lines are
/// read again (conflicts are rare) to fetch them. Where a file cannot be read again, the
/// stand-in excerpt made by [`assemble`] stays.
pub fn excerpt_conflicts(files: &[PathBuf], ing: &mut Ingested, opts: &IngestOptions) {
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
    /// The format the file was read as.
    pub format: Format,
    pub summary: FileSummary,
    pub events: Vec<Event>,
    /// Canonical events kept in memory, already grouped by root as they were read (one
    /// buffer per root), so that assembly moves each buffer whole instead of every event.
    pub groups: Vec<Vec<Event>>,
    pub rejects: Vec<Reject>,
    /// Lines the reader went through, blank and rejected ones included (the last line
    /// number it gave).
    pub line_count: u64,
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
    let rel = relative_name(Path::new(name), &[]);
    read_stream_at(file_idx, name, &rel, raw, opts)
}

/// [`read_stream`] with the file's relative name (see [`relative_name`]), which importers
/// use in place of missing ids.
pub fn read_stream_at<R: Read>(
    file_idx: u32,
    name: &str,
    rel: &str,
    raw: R,
    opts: &IngestOptions,
) -> Result<FileRead> {
    read_piece(file_idx, name, rel, raw, opts, true)
}

/// [`read_stream_at`] of a stream that starts at the start of the file (`at_file_start`:
/// a byte order mark is skipped) or at a later line (numbered from 1 all the same).
fn read_piece<R: Read>(
    file_idx: u32,
    name: &str,
    rel: &str,
    raw: R,
    opts: &IngestOptions,
    at_file_start: bool,
) -> Result<FileRead> {
    let ctx = FileContext {
        file_idx,
        name: name.to_string(),
        rel: rel.to_string(),
    };
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
            read_lines(&ctx, &mut r, opts, &mut out, compression, at_file_start);
            r.get_ref().get_ref().get_ref().count
        }
        "zstd" => {
            let dec = zstd::stream::read::Decoder::with_buffer(counting)
                .map_err(|e| Error::io(name, e))?;
            let mut r = BufReader::with_capacity(1 << 16, dec);
            read_lines(&ctx, &mut r, opts, &mut out, compression, at_file_start);
            r.get_ref().get_ref().get_ref().count
        }
        _ => {
            read_lines(
                &ctx,
                &mut counting,
                opts,
                &mut out,
                compression,
                at_file_start,
            );
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
        buf.truncate(EXCERPT_BYTES + crate::decode::SECRET_LOOKAHEAD); // room to mask a secret cut at the excerpt's end
        return Ok(LineRead::TooLong(total));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(LineRead::Line)
}

#[inline]
fn memchr(s: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', s)
}

fn read_lines<R: BufRead>(
    ctx: &FileContext,
    r: &mut R,
    opts: &IngestOptions,
    out: &mut FileRead,
    compression: &str,
    at_file_start: bool,
) {
    let mut buf = Vec::with_capacity(4096);
    let mut line_no: u64 = 0;
    let mut lines = LineSink::new(ctx, opts.format, opts.spill.clone());
    loop {
        let res = next_line(r, &mut buf, opts.max_line_bytes);
        match res {
            Ok(LineRead::Eof) => break,
            Ok(LineRead::TooLong(len)) => {
                line_no += 1;
                let reason = format!(
                    "line is {len} bytes, longer than the limit of {} bytes",
                    opts.max_line_bytes
                );
                lines.reject(out, line_no, reason, excerpt(&buf));
            }
            Ok(LineRead::Line) => {
                line_no += 1;
                let mut line: &[u8] = &buf;
                if at_file_start && line_no == 1 && line.starts_with(b"\xEF\xBB\xBF") {
                    line = &line[3..];
                }
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    out.summary.blank += 1;
                    continue;
                }
                lines.line(out, line_no, line);
            }
            Err(e) => {
                // A broken compressed stream (or a read error): what was read before stays,
                // the break itself is recorded as a reject.
                line_no += 1;
                let reason = format!("{compression} stream broken: {e}");
                lines.reject(out, line_no, reason, excerpt(&buf));
                break;
            }
        }
    }
    lines.finish(out, line_no);
    out.line_count = line_no;
}

/// The ids of one file's events, shared: every event naming the same root, session, turn or
/// type gets the same [`Id`] (a pointer), made once. Events of an agent mostly name the
/// root, session and turn of the event before, so each is compared with the last one
/// handed out before it is looked up.
#[derive(Default)]
pub struct Ids {
    /// The last root, session and turn handed out ([`Ids::ROOT`], [`Ids::SESSION`],
    /// [`Ids::TURN`]).
    last: [Option<Id>; 3],
    /// The listed event types, by [`Kind`], made on first use.
    kinds: Vec<Option<Id>>,
    known: std::collections::HashSet<Id, ahash::RandomState>,
}

impl Ids {
    const ROOT: usize = 0;
    const SESSION: usize = 1;
    const TURN: usize = 2;

    /// The event of an envelope, with shared ids.
    pub fn event(&mut self, env: &Envelope, file: u32, line: u64) -> Event {
        let k = Kind::of(env.kind);
        Event {
            seq: env.seq,
            ts: env.ts,
            root: self.id(Self::ROOT, env.root),
            session: self.id(Self::SESSION, env.session),
            turn: env.turn.map(|t| self.id(Self::TURN, t)),
            kind: self.kind(k, env.kind),
            data: env.data.to_string(),
            file,
            line,
            index: PayloadIndex::of_members(k, env.data, &env.members),
        }
    }

    fn id(&mut self, slot: usize, text: &str) -> Id {
        if let Some(last) = &self.last[slot] {
            if last.as_str() == text {
                return last.clone();
            }
        }
        let id = self.shared(text);
        self.last[slot] = Some(id.clone());
        id
    }

    fn shared(&mut self, text: &str) -> Id {
        if let Some(id) = self.known.get(text) {
            return id.clone();
        }
        let id = Id::from(text);
        self.known.insert(id.clone());
        id
    }

    /// The shared id of type `text`, whose kind is `k`.
    fn kind(&mut self, k: Kind, text: &str) -> Id {
        if k == Kind::Other {
            return self.shared(text);
        }
        let i = k as usize;
        if self.kinds.len() <= i {
            self.kinds.resize(i + 1, None);
        }
        self.kinds[i].get_or_insert_with(|| Id::from(text)).clone()
    }
}

/// Where a file's non-blank lines go: the canonical decoder or the file format's importer.
/// Under `auto` the first lines are held until one of them tells the format (or
/// [`import::DETECT_RECORDS`] lines have not); a file that never tells is read as canonical,
/// so its lines get the canonical decoder's reject reasons.
struct LineSink<'c> {
    ctx: &'c FileContext,
    format: Format,
    importer: Option<Box<dyn import::Importer>>,
    /// Lines held while the format is undecided: (line number, bytes) or a reject.
    held: Vec<Held>,
    imported: Vec<Event>,
    spill: Option<EventSink>,
    /// Root → index of its buffer in [`FileRead::groups`].
    group_of: HashMap<String, usize, ahash::RandomState>,
    /// The group of the last event, and the events grouped so far.
    last_group: usize,
    grouped: usize,
    /// Groups whose spare capacity was given back (each at most once).
    trimmed: Vec<bool>,
    ids: Ids,
    /// The minute of the last timestamp decoded (see [`LastMinute`]).
    last_minute: LastMinute,
}

enum Held {
    Line(u64, Vec<u8>),
    Reject(u64, String, String),
}

impl<'c> LineSink<'c> {
    fn new(ctx: &'c FileContext, format: Format, spill: Option<EventSink>) -> Self {
        let mut sink = LineSink {
            ctx,
            format,
            importer: None,
            held: Vec::new(),
            imported: Vec::new(),
            spill,
            group_of: HashMap::default(),
            last_group: 0,
            grouped: 0,
            trimmed: Vec::new(),
            ids: Ids::default(),
            last_minute: LastMinute::default(),
        };
        if format != Format::Auto {
            sink.decide(format);
        }
        sink
    }

    fn decide(&mut self, format: Format) {
        self.format = format;
        self.importer = import::importer(format, self.ctx);
    }

    fn line(&mut self, out: &mut FileRead, line_no: u64, line: &[u8]) {
        if self.format == Format::Auto {
            let detected = import::detect_record(line);
            self.held.push(Held::Line(line_no, line.to_vec()));
            let lines_held = self
                .held
                .iter()
                .filter(|h| matches!(h, Held::Line(..)))
                .count();
            match detected {
                Some(f) => self.decide(f),
                None if lines_held >= import::DETECT_RECORDS => self.decide(Format::Runlog),
                None => return,
            }
            self.release(out);
            return;
        }
        out.summary.lines += 1;
        match &mut self.importer {
            None => match self.decode(line_no, line) {
                Ok(ev) => {
                    match &self.spill {
                        Some(spill) => {
                            out.events.push(ev);
                            if out.events.len() >= SPILL_BATCH {
                                spill(&mut out.events);
                            }
                        }
                        None => {
                            // Logs mostly write an agent's events in a run: the last
                            // group is checked before the map.
                            let g = match out.groups.get(self.last_group) {
                                Some(last) if last.first().is_some_and(|e| e.root == ev.root) => {
                                    self.last_group
                                }
                                _ => match self.group_of.get(ev.root.as_str()) {
                                    Some(&g) => g,
                                    None => {
                                        self.group_of.insert(ev.root.to_string(), out.groups.len());
                                        // Sized like the file's agents so far, so that most
                                        // buffers never grow (each growth copies the buffer).
                                        let avg = self.grouped / out.groups.len().max(1);
                                        out.groups.push(Vec::with_capacity(avg.clamp(16, 4096)));
                                        out.groups.len() - 1
                                    }
                                },
                            };
                            if g != self.last_group {
                                self.trim(out, self.last_group);
                            }
                            self.last_group = g;
                            self.grouped += 1;
                            out.groups[g].push(ev);
                        }
                    }
                }
                Err(reason) => push_reject(out, &self.ctx.name, line_no, reason, excerpt(line)),
            },
            Some(imp) => {
                let before = self.imported.len();
                match imp.line(line_no, line, &mut self.imported) {
                    Ok(()) => {
                        for ev in &mut self.imported[before..] {
                            if ev.line == 0 {
                                ev.line = line_no;
                            }
                        }
                    }
                    Err(reason) => {
                        self.imported.truncate(before);
                        push_reject(out, &self.ctx.name, line_no, reason, excerpt(line));
                    }
                }
            }
        }
    }

    /// A canonical line's event: the fast path's envelope with shared ids, else whatever
    /// the general decoder says.
    fn decode(&mut self, line_no: u64, line: &[u8]) -> std::result::Result<Event, String> {
        match parse_envelope_after(line, &mut self.last_minute) {
            Some(env) => Ok(self.ids.event(&env, self.ctx.file_idx, line_no)),
            None => parse_line_general(line).map(|mut ev| {
                ev.file = self.ctx.file_idx;
                ev.line = line_no;
                ev
            }),
        }
    }

    /// Gives back the spare capacity of the group the reader just left, for the next agents'
    /// buffers. Logs mostly write an agent's events in a run, so that group is likely
    /// complete; as buffers double, up to half of one is spare (on a generated 211 MB log,
    /// trimming lowered the peak memory after reading from 485 to 410 MB). Once per group:
    /// an agent whose events are interleaved with others' would otherwise be copied at every
    /// switch.
    fn trim(&mut self, out: &mut FileRead, g: usize) {
        let Some(group) = out.groups.get_mut(g) else {
            return;
        };
        if self.trimmed.len() <= g {
            self.trimmed.resize(g + 1, false);
        }
        if !self.trimmed[g] && group.capacity() - group.len() > group.len() / 8 {
            self.trimmed[g] = true;
            // A copy, not `shrink_to_fit`: mimalloc's realloc keeps a block that shrinks by
            // less than half, spare capacity and all.
            let mut exact = Vec::with_capacity(group.len());
            exact.append(group);
            *group = exact;
        }
    }

    fn reject(&mut self, out: &mut FileRead, line_no: u64, reason: String, excerpt: String) {
        if self.format == Format::Auto {
            self.held.push(Held::Reject(line_no, reason, excerpt));
        } else {
            out.summary.lines += 1;
            push_reject(out, &self.ctx.name, line_no, reason, excerpt);
        }
    }

    /// Feeds the held lines, in order, now that the format is known.
    fn release(&mut self, out: &mut FileRead) {
        for h in std::mem::take(&mut self.held) {
            match h {
                Held::Line(n, bytes) => self.line(out, n, &bytes),
                Held::Reject(n, reason, ex) => self.reject(out, n, reason, ex),
            }
        }
    }

    fn finish(mut self, out: &mut FileRead, last_line: u64) {
        if self.format == Format::Auto {
            self.decide(Format::Runlog);
            self.release(out);
        }
        if let Some(imp) = &mut self.importer {
            let before = self.imported.len();
            imp.finish(&mut self.imported);
            for ev in &mut self.imported[before..] {
                if ev.line == 0 {
                    ev.line = last_line.max(1);
                }
            }
            for ev in &mut self.imported {
                ev.file = self.ctx.file_idx;
            }
            out.events.append(&mut self.imported);
        } else if let Some(spill) = &self.spill {
            spill(&mut out.events);
        }
        out.summary.format = self.format.name().to_string();
        out.format = self.format;
    }
}

fn push_reject(out: &mut FileRead, file: &str, line: u64, reason: String, excerpt: String) {
    out.summary.rejects += 1;
    out.rejects.push(Reject {
        file: file.to_string(),
        line,
        reason,
        excerpt,
    });
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
                ag.parts_of[a as usize] += 1;
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
        if let Some(a) = whole {
            ag.parts_of[a as usize] += 1;
            agent_of.truncate(start); // not needed: the part moves whole
        } else {
            for &a in &agent_of[start..] {
                ag.parts_of[a as usize] += 2; // counts as "not alone"
            }
        }
        part_agent.push(whole);
    }
    let AgentIndex {
        index,
        roots,
        sizes,
        parts_of,
    } = ag;
    drop(index);
    // Pass 2: move.
    let mut grouped: Vec<Vec<Event>> = vec![Vec::new(); sizes.len()];
    let mut k = 0;
    for (part, whole) in parts.into_iter().zip(part_agent) {
        match whole {
            Some(a) if parts_of[a as usize] == 1 => grouped[a as usize] = part,
            Some(a) => {
                let g = &mut grouped[a as usize];
                g.reserve_exact(sizes[a as usize] - g.len());
                g.extend(part);
            }
            None => {
                for ev in part {
                    let g = &mut grouped[agent_of[k] as usize];
                    if g.capacity() == 0 {
                        g.reserve_exact(sizes[agent_of[k] as usize]);
                    }
                    g.push(ev);
                    k += 1;
                }
            }
        }
    }
    drop(agent_of);
    let by_root: Vec<(String, Vec<Event>)> = roots.into_iter().zip(grouped).collect();
    let mut agents: Vec<Resolved> = by_root
        .into_par_iter()
        .map(|(root, mut evs)| {
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
    index: HashMap<String, u32, ahash::RandomState>,
    roots: Vec<String>,
    /// Events per agent.
    sizes: Vec<usize>,
    /// Per agent: 1 per part holding only its events, 2 per part shared with others.
    parts_of: Vec<u32>,
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
        self.parts_of.push(0);
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

/// Imported events name the root their own file knows; a subagent's file may know only its
/// parent session. Each session whose events name another root points there; roots are
/// followed along those links (across files) to the top.
pub fn resolve_imported_roots(all: &mut [Vec<Event>], imported: &[bool]) {
    let mut up: HashMap<String, String> = HashMap::new();
    for (f, evs) in all.iter().enumerate() {
        if !imported[f] {
            continue;
        }
        for ev in evs {
            if ev.session != ev.root {
                up.entry(ev.session.to_string())
                    .or_insert_with(|| ev.root.to_string());
            }
        }
    }
    if up.is_empty() {
        return;
    }
    let top = |start: &str| -> Option<String> {
        let mut cur = start;
        let mut steps = 0;
        while let Some(next) = up.get(cur) {
            if next == start || steps > 64 {
                break; // a cycle: keep the root as written
            }
            cur = next;
            steps += 1;
        }
        (cur != start).then(|| cur.to_string())
    };
    for (f, evs) in all.iter_mut().enumerate() {
        if !imported[f] {
            continue;
        }
        for ev in evs.iter_mut() {
            if let Some(t) = top(&ev.root) {
                ev.root = t.into();
            }
        }
    }
}

/// Orders an imported agent's events and numbers them again when its files' counters
/// cannot be compared (several files) or collide; a single file's own order is kept.
fn renumber_imported(kept: &mut [Event]) {
    let several_files = kept.windows(2).any(|w| w[0].file != w[1].file);
    let collide = kept.windows(2).any(|w| w[0].seq == w[1].seq);
    if !several_files && !collide {
        return;
    }
    kept.sort_by_key(|e| (e.ts, e.file, e.seq, e.line));
    for (i, ev) in kept.iter_mut().enumerate() {
        ev.seq = i as u64;
    }
}
