//! Ingest: find the log files, read them as streams (plain, gzip or zstd), validate each
//! line's envelope (EVENTS.md) and turn it into an [`Event`] or a [`Reject`], then group
//! the events by agent (`root`), order them by `seq` and drop duplicates (SEMANTICS.md §1, §7).
//!
//! Nothing is lost: every non-blank line read ends up kept, a duplicate, or a reject.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::event::Event;

/// Default longest line accepted (SEMANTICS.md §7).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of a rejected line kept as its excerpt.
pub const EXCERPT_BYTES: usize = 200;

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

/// The first bytes of a line, as text, with secrets masked.
pub fn excerpt(line: &[u8]) -> String {
    let mut end = line.len().min(EXCERPT_BYTES);
    // Cut on a character boundary when the line is UTF-8.
    if let Err(e) = std::str::from_utf8(&line[..end]) {
        if e.error_len().is_none() {
            end = e.valid_up_to();
        }
    }
    mask_secrets(&String::from_utf8_lossy(&line[..end]))
}

/// Masks substrings that look like API keys or bearer tokens.
pub fn mask_secrets(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let is_tok = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.';
    while i < bytes.len() {
        let rest = &s[i..];
        let prefix_len = if rest.starts_with("sk-") || rest.starts_with("sk_") {
            3
        } else if rest.len() >= 7 && rest.as_bytes()[..7].eq_ignore_ascii_case(b"bearer ") {
            7
        } else if rest.starts_with("AKIA") {
            0
        } else {
            usize::MAX
        };
        if prefix_len != usize::MAX {
            let start = i + prefix_len;
            let mut j = start;
            while j < bytes.len() && is_tok(bytes[j]) {
                j += 1;
            }
            if j - start >= 12 {
                out.push_str(&s[i..start]);
                out.push_str("***");
                i = j;
                continue;
            }
        }
        let ch = rest.chars().next().unwrap_or('\0');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
}

#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow, default)]
    seq: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    root: Option<&'a RawValue>,
    #[serde(borrow, default)]
    session: Option<&'a RawValue>,
    #[serde(borrow, default)]
    turn: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

/// Parses one line's envelope into an event (with `file`/`line` left 0), or says why not.
pub fn parse_line(line: &[u8]) -> std::result::Result<Event, String> {
    let text = match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => return Err(format!("not valid UTF-8 (byte {})", e.valid_up_to() + 1)),
    };
    if nests_deeper_than(line, MAX_DEPTH) {
        return Err(format!("nests deeper than {MAX_DEPTH} levels"));
    }
    let first = text.trim_start().as_bytes().first().copied();
    if first != Some(b'{') {
        // Distinguish "valid JSON but not an object" from "not JSON".
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => format!("not a JSON object (a JSON {})", json_kind(text)),
            Err(e) => format!("not valid JSON: {}", json_err(&e)),
        });
    }
    let env: RawEnvelope = serde_json::from_str(text).map_err(|e| {
        if e.is_data() {
            format!("bad envelope: {}", json_err(&e))
        } else {
            format!("not valid JSON: {}", json_err(&e))
        }
    })?;
    let seq = match env.seq {
        None => return Err("missing required field `seq`".into()),
        Some(raw) => parse_seq(raw.get())?,
    };
    let ts_text = required_string(env.ts, "ts")?;
    let ts = parse_ts(&ts_text)
        .ok_or_else(|| format!("`ts` is not an RFC 3339 timestamp with an offset: {ts_text:?}"))?;
    let root = required_string(env.root, "root")?.into_owned();
    let session = required_string(env.session, "session")?.into_owned();
    let kind = required_string(env.kind, "type")?.into_owned();
    let turn = match env.turn {
        None => None,
        Some(raw) => Some(
            as_string(raw)
                .ok_or_else(|| {
                    format!(
                        "`turn` must be a string or null, found {}",
                        json_kind(raw.get())
                    )
                })?
                .into_owned(),
        ),
    };
    let data = match env.data {
        None => "{}".to_string(),
        Some(raw) if raw.get().starts_with('{') => raw.get().to_string(),
        Some(raw) => {
            return Err(format!(
                "`data` must be an object or null, found {}",
                json_kind(raw.get())
            ))
        }
    };
    Ok(Event {
        seq,
        ts,
        root,
        session,
        turn,
        kind,
        data,
        file: 0,
        line: 0,
    })
}

/// Deepest nesting of arrays and objects accepted in a line (SEMANTICS.md §7).
pub const MAX_DEPTH: usize = 128;

/// Whether the arrays and objects of a line nest deeper than `limit` (the line itself,
/// an object, is level 1). Brackets inside strings do not count. serde_json does not
/// check depth where the envelope holds raw values, so it is checked here.
fn nests_deeper_than(line: &[u8], limit: usize) -> bool {
    // Fast path (vectorised count): a line with few brackets cannot nest deeply.
    let opens = line
        .iter()
        .fold(0usize, |n, &b| n + ((b == b'[') | (b == b'{')) as usize);
    if opens <= limit {
        return false;
    }
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for &b in line {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn json_err(e: &serde_json::Error) -> String {
    // serde_json appends " at line L column C"; the line is always 1 here.
    let s = e.to_string();
    match s.rfind(" at line 1 column ") {
        Some(i) => format!("{} at column {}", &s[..i], &s[i + 18..]),
        None => s,
    }
}

fn json_kind(raw: &str) -> &'static str {
    match raw.trim_start().as_bytes().first() {
        Some(b'"') => "string",
        Some(b'[') => "array",
        Some(b'{') => "object",
        Some(b't') | Some(b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

fn as_string(raw: &RawValue) -> Option<Cow<'_, str>> {
    if raw.get().starts_with('"') {
        serde_json::from_str::<Cow<str>>(raw.get()).ok()
    } else {
        None
    }
}

fn required_string<'a>(
    raw: Option<&'a RawValue>,
    name: &str,
) -> std::result::Result<Cow<'a, str>, String> {
    match raw {
        None => Err(format!("missing required field `{name}`")),
        Some(r) => as_string(r)
            .ok_or_else(|| format!("`{name}` must be a string, found {}", json_kind(r.get()))),
    }
}

fn parse_seq(raw: &str) -> std::result::Result<u64, String> {
    let bad = || format!("`seq` must be an integer in 0..2^63, found {raw}");
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match raw.parse::<u64>() {
        Ok(v) if v < (1u64 << 63) => Ok(v),
        _ => Err(bad()),
    }
}

/// Parses an RFC 3339 timestamp with an offset into microseconds since the epoch (UTC).
pub fn parse_ts(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_micros())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_errors_name_the_field() {
        let ok =
            br#"{"seq":1,"ts":"2026-11-03T10:00:00.000Z","root":"s1","session":"s1","type":"x"}"#;
        let ev = parse_line(ok).unwrap();
        assert_eq!(ev.seq, 1);
        assert_eq!(ev.data, "{}");
        assert_eq!(ev.ts, 1_793_700_000_000_000);
        let cases: &[(&[u8], &str)] = &[
            (b"[1]", "not a JSON object"),
            (b"{\"seq\":", "not valid JSON"),
            (br#"{"seq":-1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x"}"#, "`seq` must be an integer"),
            (br#"{"seq":1.5,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x"}"#, "`seq` must be an integer"),
            (br#"{"seq":9223372036854775808,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x"}"#, "`seq` must be an integer"),
            (br#"{"seq":1,"ts":"2026-11-03 10:00:00","root":"a","session":"a","type":"x"}"#, "RFC 3339"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00","root":"a","session":"a","type":"x"}"#, "RFC 3339"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":5,"session":"a","type":"x"}"#, "`root` must be a string"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","type":"x"}"#, "missing required field `session`"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","turn":3,"type":"x"}"#, "`turn` must be a string or null"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x","data":[1]}"#, "`data` must be an object"),
            (b"{\"seq\":1,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\xff\"}", "not valid UTF-8"),
        ];
        for (line, want) in cases {
            let err = parse_line(line).unwrap_err();
            assert!(
                err.contains(want),
                "{:?}: got {err:?}, want {want:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn deep_nesting_is_rejected() {
        let deep = format!(
            "{{\"seq\":1,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\",\"session\":\"a\",\"type\":\"x\",\"data\":{{\"v\":{}{}}}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(parse_line(deep.as_bytes()).is_err());
        let ok = format!(
            "{{\"seq\":1,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\",\"session\":\"a\",\"type\":\"x\",\"data\":{{\"v\":{}{}}}}}",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(parse_line(ok.as_bytes()).is_ok());
    }

    #[test]
    fn masks_secrets() {
        assert_eq!(
            mask_secrets("key sk-abcdefghijklmnop end"),
            "key sk-*** end"
        );
        assert_eq!(
            mask_secrets("Authorization: Bearer abcdefghijklmnopq"),
            "Authorization: Bearer ***"
        );
        assert_eq!(mask_secrets("sk-short"), "sk-short");
    }
}
