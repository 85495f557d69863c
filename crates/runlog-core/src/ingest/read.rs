//! Reading one file (or one piece of a large plain file) as a stream of lines: plain,
//! gzip or zstd; each line decoded into an event or a reject (with its file, line, reason and
//! masked excerpt), or handed to the file's importer; ids shared per file ([`Ids`]).

use super::discover::{relative_name, Input};
use super::ids::Ids;
use super::keep::{kind_of, root_key, Blocker};
use super::partitions::SpillBatch;
use super::{FileSummary, IngestOptions, Reject};
use crate::decode::{excerpt, EXCERPT_BYTES};
use crate::decode::{parse_envelope_after, parse_line_general, peek_head, LastMinute};
use crate::error::{Error, Result};
use crate::event::{Event, Id, Kind, KindSet};
use crate::import::{self, FileContext, Format, Importer as _};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// A part of an input file to read: from byte `start` (the start of a line), `len` bytes or
/// to the end.
pub(super) struct Piece {
    pub(super) file: usize,
    pub(super) start: u64,
    pub(super) len: Option<u64>,
}

/// The pieces to read the files in: a file whole, unless it is plain (not compressed), at
/// least twice the piece size ([`piece_bytes`], at most [`IngestOptions::split_bytes`]),
/// and canonical (the format asked for, or,
/// under `auto`, what its first line is detected as), so that a piece can be read without
/// what came before it. Pieces of a file come in order; each starts just after a newline.
pub(super) fn split_files(files: &[Input], opts: &IngestOptions) -> Result<Vec<Piece>> {
    let mut out = Vec::new();
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(&f.path).map(|m| m.len()).unwrap_or(0))
        .collect();
    let step = piece_bytes(sizes.iter().sum(), opts.split_bytes);
    for (i, (input, &size)) in files.iter().zip(&sizes).enumerate() {
        let p = &input.path;
        let whole = Piece {
            file: i,
            start: 0,
            len: None,
        };
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
            let Some(end) = next_line_start(&mut f, at).map_err(|e| Error::io(&input.name, e))?
            else {
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

/// Pieces per thread that [`piece_bytes`] aims at: enough that the threads finish
/// within a small piece of each other (8 files of 24 MB, read whole, left one of two cores
/// idle for up to a tenth of the read; in pieces of 8 MB, the last one took ~40 ms alone).
/// A piece costs little more than its file's open and its roots' look-ups in assembly.
const PIECES_PER_THREAD: u64 = 24;

/// The smallest piece [`piece_bytes`] cuts: pieces of 1 MiB at least (32 per thread)
/// measured no better than these.
const MIN_PIECE_BYTES: u64 = 4 << 20;

/// The piece size for inputs of `total` bytes: about [`PIECES_PER_THREAD`] pieces per
/// thread, at least [`MIN_PIECE_BYTES`] and at most `max` (0: no pieces).
fn piece_bytes(total: u64, max: u64) -> u64 {
    let threads = rayon::current_num_threads().max(1) as u64;
    (total / (threads * PIECES_PER_THREAD)).clamp(MIN_PIECE_BYTES.min(max), max)
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

/// The events and rejects read from one stream, before assembly.
#[derive(Debug, Default)]
pub struct FileRead {
    /// The format the file was read as.
    pub format: Format,
    pub summary: FileSummary,
    pub events: Vec<Event>,
    /// Canonical events kept in memory, in the order read, numbered by root ([`Grouped`]).
    pub grouped: Vec<Grouped>,
    pub rejects: Vec<Reject>,
    /// Lines of types not kept ([`IngestOptions::keep`]), in the order read: one list, or,
    /// when the read spills, one per spill partition (of the line's root).
    pub blockers: Vec<Vec<Blocker>>,
    /// Lines the reader went through, blank and rejected ones included (the last line
    /// number it gave).
    pub line_count: u64,
}

impl FileRead {
    /// Numbers the lines read after `shift` lines that came before them (a piece read
    /// after the pieces before it in its file, or a file read from where it was left).
    pub fn shift_lines(&mut self, shift: u64) {
        let events = self.grouped.iter_mut().flat_map(|g| g.events.iter_mut());
        for ev in events.chain(self.events.iter_mut()) {
            ev.line += shift;
        }
        for rej in &mut self.rejects {
            rej.line += shift;
        }
        for b in self.blockers.iter_mut().flatten() {
            b.line += shift;
        }
    }
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
pub(super) fn read_piece<R: Read>(
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
        keep: opts.keep,
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
pub(super) enum LineRead {
    /// A whole line is in the buffer (without its line end).
    Line,
    /// The line was longer than the limit: its first bytes are in the buffer, the rest was skipped.
    TooLong(u64),
    /// End of stream.
    Eof,
}

/// Reads the next line into `buf` (cleared first), holding at most `max` bytes of it.
pub(super) fn next_line<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineRead> {
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
    if at_file_start && matches!(opts.format, Format::Auto | Format::Otlp) {
        if let Ok(head) = r.fill_buf() {
            if import::otlp::is_proto_stream(head) {
                read_otlp_proto(ctx, r, out, compression);
                return;
            }
        }
    }
    let mut buf = Vec::with_capacity(4096);
    let mut line_no: u64 = 0;
    let spill = opts.spill.as_deref().map(SpillBatch::new);
    let mut lines = LineSink::new(ctx, opts.format, spill, opts.keep, opts.root.clone());
    loop {
        // A line that is whole in the reader's buffer is read there, without a copy; the
        // rest (a line across the buffer's end, a long one) by `next_line`.
        let avail = match r.fill_buf() {
            Ok(avail) => avail,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // As `next_line` reports it: nothing of the line read yet.
                line_no += 1;
                let reason = format!("{compression} stream broken: {e}");
                lines.reject(out, line_no, reason, excerpt(&[]));
                break;
            }
        };
        if avail.is_empty() {
            break;
        }
        if let Some(i) = memchr(avail).filter(|&i| i <= opts.max_line_bytes) {
            line_no += 1;
            let line = &avail[..i];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            lines.take(out, line_no, line, at_file_start);
            r.consume(i + 1);
            continue;
        }
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
                lines.take(out, line_no, &buf, at_file_start);
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

/// An OTLP protobuf file (the Collector's file exporter with `format: proto`), read whole
/// by the OTLP importer: message k is numbered as line k.
fn read_otlp_proto<R: BufRead>(
    ctx: &FileContext,
    r: &mut R,
    out: &mut FileRead,
    compression: &str,
) {
    let mut bytes = Vec::new();
    let broken = r.read_to_end(&mut bytes).err();
    let mut imp = import::otlp::OtlpImporter::new(ctx);
    let mut messages = imp.read_proto(&bytes);
    imp.finish(&mut out.events);
    for (line, reason, ex) in imp.rejects() {
        push_reject(out, &ctx.name, line, reason, ex);
    }
    if let Some(e) = broken {
        // As a broken line stream: what was read stays, the break is a reject after it.
        messages += 1;
        let reason = format!("{compression} stream broken: {e}");
        push_reject(out, &ctx.name, messages, reason, excerpt(&[]));
    }
    for ev in &mut out.events {
        if ev.line == 0 {
            ev.line = messages.max(1);
        }
        ev.file = ctx.file_idx;
    }
    out.summary.lines = messages;
    out.line_count = messages;
    out.summary.format = Format::Otlp.name().to_string();
    out.format = Format::Otlp;
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
    /// Under `auto`, the file opened as one JSON document over many lines: every line is
    /// held and the whole text decides the format at the end ([`import::detect_document`]).
    document: bool,
    imported: Vec<Event>,
    /// Where the canonical events go when they are spilled, instead of the grouper.
    spill: Option<SpillBatch<'c>>,
    /// The canonical events read into memory, numbered by root ([`Grouper`]).
    grouper: Grouper,
    ids: Ids,
    /// The minute of the last timestamp decoded (see [`LastMinute`]).
    last_minute: LastMinute,
    /// The kinds of canonical events kept (`None`: all); the other lines become
    /// [`Blocker`]s.
    keep: Option<KindSet>,
    /// The one root whose canonical lines are kept (`None`: all; [`IngestOptions::root`]).
    root: Option<std::sync::Arc<str>>,
}

enum Held {
    Line(u64, Vec<u8>),
    Reject(u64, String, String),
}

impl<'c> LineSink<'c> {
    fn new(
        ctx: &'c FileContext,
        format: Format,
        spill: Option<SpillBatch<'c>>,
        keep: Option<KindSet>,
        root: Option<std::sync::Arc<str>>,
    ) -> Self {
        let mut sink = LineSink {
            ctx,
            format,
            importer: None,
            held: Vec::new(),
            document: false,
            imported: Vec::new(),
            spill,
            grouper: Grouper::default(),
            ids: Ids::default(),
            last_minute: LastMinute::default(),
            keep,
            root,
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

    /// A line as read (without its line end): a byte order mark skipped at the start of the
    /// file, a blank line counted, any other line handed on.
    #[inline]
    fn take(&mut self, out: &mut FileRead, line_no: u64, mut line: &[u8], at_file_start: bool) {
        if at_file_start && line_no == 1 && line.starts_with(b"\xEF\xBB\xBF") {
            line = &line[3..];
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            out.summary.blank += 1;
            return;
        }
        self.line(out, line_no, line);
    }

    fn line(&mut self, out: &mut FileRead, line_no: u64, line: &[u8]) {
        if self.format == Format::Auto {
            if self.held.is_empty() && import::opens_document(line) {
                self.document = true;
            }
            if self.document {
                self.held.push(Held::Line(line_no, line.to_vec()));
                return;
            }
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
            None => {
                let file = self.ctx.file_idx;
                if let Some(root) = &self.root {
                    // A line of another agent is read no further than its root.
                    if peek_head(line).is_some_and(|h| h.root != root.as_bytes()) {
                        return;
                    }
                }
                if let Some(keep) = self.keep {
                    // A line of a type not kept is read no further than its type.
                    if let Some(h) = peek_head(line) {
                        if kind_of(h.kind).is_some_and(|k| !keep.contains(k)) {
                            let key = root_key(h.root);
                            block(out, self.part_of(key), key, h.seq, line_no);
                            return;
                        }
                    }
                }
                let keep = self.keep;
                let env = parse_envelope_after(line, &mut self.last_minute);
                let other = |r: &str| self.root.as_deref().is_some_and(|root| r != root);
                if env.is_some_and(|e| other(e.root)) {
                    return;
                }
                let decoded = match (env, &mut self.spill) {
                    (Some(env), Some(spill)) => {
                        match keep.filter(|k| !k.contains(Kind::of(env.kind))) {
                            Some(_) => {
                                let key = root_key(env.root.as_bytes());
                                block(out, spill.partition_of_key(key), key, env.seq, line_no);
                            }
                            None => spill.envelope(&env, file, line_no),
                        }
                        Ok(())
                    }
                    (Some(env), None) => {
                        let ev = self.ids.event(&env, file, line_no);
                        keep_or_block(&mut self.grouper, out, ev, keep);
                        Ok(())
                    }
                    (None, spill) => general(line, file, line_no).map(|ev| match spill {
                        _ if other(ev.root.as_str()) => {}
                        Some(spill) if keep.is_none_or(|k| k.contains(Kind::of(&ev.kind))) => {
                            spill.event(&ev)
                        }
                        Some(spill) => {
                            let key = root_key(ev.root.as_bytes());
                            block(out, spill.partition_of_key(key), key, ev.seq, line_no);
                        }
                        None => keep_or_block(&mut self.grouper, out, ev, keep),
                    }),
                };
                if let Err(reason) = decoded {
                    push_reject(out, &self.ctx.name, line_no, reason, excerpt(line));
                }
            }
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

    /// The blockers' list of the root whose [`root_key`] is `key`: its spill partition, or
    /// the one list of a read in memory. (A root that is not UTF-8 is a blocker's too: no
    /// kept event has it, so it displaces none; `settle` confirms a match on the text.)
    fn part_of(&self, key: u64) -> usize {
        match &self.spill {
            None => 0,
            Some(spill) => spill.partition_of_key(key),
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

    /// The held lines as one text (a document's).
    fn held_text(&self) -> Vec<u8> {
        let mut text = Vec::new();
        for h in &self.held {
            if let Held::Line(_, bytes) = h {
                text.extend_from_slice(bytes);
                text.push(b'\n');
            }
        }
        text
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
            let format = if self.document {
                self.document = false;
                import::detect_document(&self.held_text())
            } else {
                None
            };
            self.decide(format.unwrap_or(Format::Runlog));
            self.release(out);
        }
        if let Some(imp) = &mut self.importer {
            let before = self.imported.len();
            imp.finish(&mut self.imported);
            for (line, reason, ex) in imp.rejects() {
                push_reject(out, &self.ctx.name, line, reason, ex);
            }
            for ev in &mut self.imported[before..] {
                if ev.line == 0 {
                    ev.line = last_line.max(1);
                }
            }
            for ev in &mut self.imported {
                ev.file = self.ctx.file_idx;
            }
            out.events.append(&mut self.imported);
        } else if let Some(spill) = &mut self.spill {
            spill.write();
        }
        self.grouper.flush(out);
        out.summary.format = self.format.name().to_string();
        out.format = self.format;
    }
}

/// A canonical event read into memory: grouped, or, when its kind is not kept, left as
/// a [`Blocker`].
fn keep_or_block(grouper: &mut Grouper, out: &mut FileRead, ev: Event, keep: Option<KindSet>) {
    match keep {
        Some(k) if !k.contains(Kind::of(&ev.kind)) => {
            block(out, 0, root_key(ev.root.as_bytes()), ev.seq, ev.line)
        }
        _ => grouper.push(out, ev),
    }
}

/// Leaves a [`Blocker`] in list `part` of `out`.
#[inline]
fn block(out: &mut FileRead, part: usize, key: u64, seq: u64, line: u64) {
    if out.blockers.len() <= part {
        out.blockers.resize_with(part + 1, Vec::new);
    }
    out.blockers[part].push(Blocker { key, seq, line });
}

/// A canonical line's event by the general decoder (for lines the fast path is not sure
/// of), numbered as read.
fn general(line: &[u8], file: u32, line_no: u64) -> std::result::Result<Event, String> {
    parse_line_general(line).map(|mut ev| {
        ev.file = file;
        ev.line = line_no;
        ev
    })
}

/// A canonical stream's events in the order read, each with its group (one per root,
/// numbered in order of first appearance). Assembly moves every event once, straight into
/// its agent's buffer ([`super::assemble_events`]); a reader that moved them into a buffer
/// per root first copied every event once more, into fresh memory (~5 % of an ingest's
/// samples on a time-rotated log).
#[derive(Debug, Default)]
pub struct Grouped {
    pub events: Vec<Event>,
    /// Each event's group: an index into `roots` and `sizes`.
    pub group: Vec<u32>,
    /// Each group's root.
    pub roots: Vec<Id>,
    /// Events per group.
    pub sizes: Vec<u32>,
}

/// Numbers a stream's canonical events by root into [`Grouped`] lists, appended to
/// [`FileRead::grouped`].
#[derive(Default)]
struct Grouper {
    held: Grouped,
    /// Root → its group in `held` (logs mostly write an agent's events in runs: the last
    /// event held is checked before the map).
    group_of: HashMap<Id, u32, foldhash::fast::RandomState>,
}

thread_local! {
    /// Events of this thread's last list: the next one starts with room for as many (a
    /// stream's pieces are of a size), instead of growing by doubling, which copied the list
    /// and touched fresh memory several times over.
    static LAST_LIST: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Grouper {
    /// Events in one list at most: a bound on one allocation and on the root map of a large
    /// stream read whole (a piece of a plain file holds a few tens of thousands).
    const FLUSH_EVENTS: usize = 1 << 18;

    fn push(&mut self, out: &mut FileRead, ev: Event) {
        let held = &mut self.held;
        if held.events.capacity() == 0 {
            let room = LAST_LIST.get().clamp(1 << 10, Self::FLUSH_EVENTS);
            held.events.reserve_exact(room);
            held.group.reserve_exact(room);
        }
        let g = match (held.events.last(), held.group.last()) {
            (Some(last), Some(&g)) if last.root == ev.root => g,
            _ => match self.group_of.get(&ev.root) {
                Some(&g) => g,
                None => {
                    let g = held.roots.len() as u32;
                    self.group_of.insert(ev.root.clone(), g);
                    held.roots.push(ev.root.clone());
                    held.sizes.push(0);
                    g
                }
            },
        };
        held.sizes[g as usize] += 1;
        held.events.push(ev);
        held.group.push(g);
        if held.events.len() >= Self::FLUSH_EVENTS {
            self.flush(out);
        }
    }

    /// Hands the held list to `out.grouped`; later events start a new one.
    fn flush(&mut self, out: &mut FileRead) {
        if self.held.events.is_empty() {
            return;
        }
        LAST_LIST.set(self.held.events.len());
        out.grouped.push(std::mem::take(&mut self.held));
        self.group_of.clear();
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
