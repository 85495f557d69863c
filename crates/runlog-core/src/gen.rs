//! Gen: deterministic, production-like session logs (EVENTS.md) for tests, demos and
//! benchmarks (`runlog gen`).
//!
//! The engine needs realistic input at any size without shipping gigabytes of logs: this
//! module writes what a fleet of agents would have recorded — owned run intervals with
//! steering, multi-step turns with streamed deltas, tool calls with every result status,
//! callbacks, subagent trees, retried model errors across the whole error-code table,
//! every kind of turn ending, runner-stream attempts (some dying mid-stream) and agents
//! whose log ends unsettled. With an anomaly rate it also writes what real pipelines
//! deliver: duplicates, conflicting re-deliveries, bad lines, truncated agents, lost
//! lines, malformed turn ends, lines out of `seq` order and agents split over two files.
//!
//! Each agent is drawn from its own small PRNG seeded by (seed, agent index), so agents are
//! independent: they are generated in parallel, in batches, and written in index order.
//! The same options always give the same bytes, and memory stays bounded whatever the size.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use rayon::prelude::*;

use crate::error::{Error, Result};

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Number of agents (root sessions).
    pub agents: u64,
    /// Seed: the same options give the same bytes.
    pub seed: u64,
    /// Number of output files (at least 1); more than one writes a folder.
    pub files: u32,
    /// Anomaly rate in `0.0..=1.0`: 0 writes only valid, distinct events.
    pub anomalies: f64,
    /// How the lines are spread over the files.
    pub layout: Layout,
    /// Which events the agents write.
    pub mix: Mix,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            agents: 100,
            seed: 1,
            files: 1,
            anomalies: 0.0,
            layout: Layout::ByAgent,
            mix: Mix::Deltas,
        }
    }
}

/// How the lines of the agents are spread over the output files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Layout {
    /// Each agent's lines together, in one file (agent `i` in file `i % files`): the easy
    /// case for ingest.
    #[default]
    ByAgent,
    /// Files are consecutive time windows (log rotation): every file holds a slice of many
    /// agents, its lines in time order, so the agents interleave. Each file is sorted in
    /// memory once written: generating needs about one file's size in memory.
    Rotated,
    /// Each agent's lines cut into runs of 1 to 5 lines, each run in a file drawn at random,
    /// and the runs of every batch of agents shuffled within each file: an agent's lines
    /// are spread over files out of `seq` order (writers that flush per batch, merged logs).
    Scattered,
}

/// Which events the agents write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Mix {
    /// Streamed logs: about 69% of the events are text and reasoning deltas.
    #[default]
    Deltas,
    /// Persisted logs (rollouts, transcripts, session files): few deltas, ~44 events per
    /// agent; per 100 events about 17 `text/delta`, 5 `reasoning/delta`, 16 `model/end`,
    /// 19 tool calls and results, 17 turn starts and ends, 12 receipts and idles, 6
    /// `session/*`, 3 `progress`, 3 `callback/*`. No runner-stream agents.
    Persisted,
}

impl Layout {
    pub const ALL: [Layout; 3] = [Layout::ByAgent, Layout::Rotated, Layout::Scattered];

    pub fn name(self) -> &'static str {
        match self {
            Layout::ByAgent => "by-agent",
            Layout::Rotated => "rotated",
            Layout::Scattered => "scattered",
        }
    }
}

impl Mix {
    pub const ALL: [Mix; 2] = [Mix::Deltas, Mix::Persisted];

    pub fn name(self) -> &'static str {
        match self {
            Mix::Deltas => "deltas",
            Mix::Persisted => "persisted",
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Layout {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Layout, String> {
        Layout::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| format!("unknown layout {s:?}: by-agent, rotated or scattered"))
    }
}

impl std::str::FromStr for Mix {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Mix, String> {
        Mix::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mix {s:?}: deltas or persisted"))
    }
}

impl GenOptions {
    fn check(&self) -> Result<()> {
        if self.files == 0 {
            return Err(Error::Invalid(
                "gen: the number of files must be at least 1".into(),
            ));
        }
        if !(0.0..=1.0).contains(&self.anomalies) {
            return Err(Error::Invalid(format!(
                "gen: the anomaly rate must be between 0 and 1, got {}",
                self.anomalies
            )));
        }
        Ok(())
    }

    fn rate(&self) -> f64 {
        if self.anomalies.is_nan() {
            0.0
        } else {
            self.anomalies.clamp(0.0, 1.0)
        }
    }
}

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenStats {
    pub agents: u64,
    /// Lines written (events, plus duplicates and bad lines with anomalies).
    pub lines: u64,
    /// Bytes of JSONL text written, before any compression.
    pub bytes: u64,
    /// Files written (1 for a stream).
    pub files: u32,
    /// Lines ingest must keep: the first line of each (root, seq) in ingest order (files
    /// in byte order of their paths, then line number), SEMANTICS.md §1.
    pub expected_kept: u64,
    /// Lines ingest must count as duplicates: equal content to the kept line of their
    /// (root, seq).
    pub expected_duplicates: u64,
    /// Lines ingest must reject: bad lines (§7) and lines conflicting with a kept one (§1).
    /// `lines == expected_kept + expected_duplicates + expected_rejects`.
    pub expected_rejects: u64,
}

impl GenStats {
    fn add(&mut self, e: &Expected) {
        self.expected_kept += e.kept;
        self.expected_duplicates += e.duplicates;
        self.expected_rejects += e.rejects;
    }
}

/// The name of file `i` of a folder.
fn part_name(i: usize) -> String {
    format!("part-{i:05}.jsonl")
}

/// All lines of agent `index` (0-based), as JSONL text without trailing newline, in the
/// order they are written to a single stream. (In a folder, an agent split over two files
/// has these lines partitioned between them, each file keeping their relative order.)
pub fn agent_lines(opts: &GenOptions, index: u64) -> Vec<String> {
    let r = render(opts, index, false);
    r.items
        .iter()
        .map(|it| r.buf[it.start..it.end].to_string())
        .collect()
}

/// Writes the whole log as one stream (plain JSONL).
pub fn write_to(opts: &GenOptions, w: &mut dyn Write) -> Result<GenStats> {
    opts.check()?;
    if opts.layout != Layout::ByAgent {
        return Err(Error::Invalid(format!(
            "gen: the {} layout writes files (give an output path)",
            opts.layout
        )));
    }
    stream_to(opts, w, Path::new("(output stream)"))
}

/// Writes to `out`: if `opts.files == 1` and `out` is not an existing folder, a single file
/// (gzip if its name ends in `.gz`, zstd if `.zst`, else plain); otherwise a folder (created
/// if missing) with `opts.files` plain files `part-00000.jsonl`, ... Agent `i` goes to file
/// `i % files`; with anomalies, some agents are split over that file and the next one.
pub fn write(opts: &GenOptions, out: &Path) -> Result<GenStats> {
    opts.check()?;
    if opts.layout != Layout::ByAgent {
        return write_spread(opts, out);
    }
    if opts.files > 1 || out.is_dir() {
        return write_folder(opts, out);
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let file = File::create(out).map_err(|e| Error::io(out, e))?;
    let buffered = BufWriter::with_capacity(1 << 20, file);
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".gz") {
        let mut enc = flate2::write::GzEncoder::new(buffered, flate2::Compression::fast());
        let stats = stream_to(opts, &mut enc, out)?;
        let mut inner = enc.finish().map_err(|e| Error::io(out, e))?;
        inner.flush().map_err(|e| Error::io(out, e))?;
        Ok(stats)
    } else if name.ends_with(".zst") {
        let mut enc =
            zstd::stream::write::Encoder::new(buffered, 3).map_err(|e| Error::io(out, e))?;
        let stats = stream_to(opts, &mut enc, out)?;
        let mut inner = enc.finish().map_err(|e| Error::io(out, e))?;
        inner.flush().map_err(|e| Error::io(out, e))?;
        Ok(stats)
    } else {
        let mut w = buffered;
        let stats = stream_to(opts, &mut w, out)?;
        w.flush().map_err(|e| Error::io(out, e))?;
        Ok(stats)
    }
}

fn stream_to(opts: &GenOptions, w: &mut dyn Write, name: &Path) -> Result<GenStats> {
    let mut stats = GenStats {
        agents: opts.agents,
        files: 1,
        ..Default::default()
    };
    let mut chunk: Vec<u8> = Vec::with_capacity(1 << 16);
    generate(opts, false, |_, r| {
        chunk.clear();
        for it in &r.items {
            chunk.extend_from_slice(&r.buf.as_bytes()[it.start..it.end]);
            chunk.push(b'\n');
        }
        stats.lines += r.items.len() as u64;
        stats.bytes += chunk.len() as u64;
        stats.add(&r.expected);
        w.write_all(&chunk).map_err(|e| Error::io(name, e))
    })?;
    w.flush().map_err(|e| Error::io(name, e))?;
    Ok(stats)
}

fn write_folder(opts: &GenOptions, dir: &Path) -> Result<GenStats> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let n = opts.files as usize;
    let cap = ((8usize << 20) / n).clamp(8 << 10, 1 << 20);
    let mut paths: Vec<PathBuf> = Vec::with_capacity(n);
    let mut writers: Vec<BufWriter<File>> = Vec::with_capacity(n);
    for i in 0..n {
        let p = dir.join(part_name(i));
        let f = File::create(&p).map_err(|e| Error::io(&p, e))?;
        writers.push(BufWriter::with_capacity(cap, f));
        paths.push(p);
    }
    let mut stats = GenStats {
        agents: opts.agents,
        files: opts.files,
        ..Default::default()
    };
    generate(opts, true, |index, r| {
        let first = (index % n as u64) as usize;
        let second = (first + 1) % n;
        for it in &r.items {
            let f = if it.second { second } else { first };
            let line = &r.buf.as_bytes()[it.start..it.end];
            let w = &mut writers[f];
            w.write_all(line)
                .and_then(|_| w.write_all(b"\n"))
                .map_err(|e| Error::io(&paths[f], e))?;
            stats.bytes += line.len() as u64 + 1;
        }
        stats.lines += r.items.len() as u64;
        stats.add(&r.expected);
        Ok(())
    })?;
    for (w, p) in writers.iter_mut().zip(&paths) {
        w.flush().map_err(|e| Error::io(p, e))?;
    }
    Ok(stats)
}

/// The files of a layout other than by-agent: `out` itself for one file that is not an
/// existing folder, else `files` parts in the folder `out`.
fn spread_paths(opts: &GenOptions, out: &Path) -> Result<Vec<PathBuf>> {
    if opts.files == 1 && !out.is_dir() {
        let name = out.to_string_lossy();
        if name.ends_with(".gz") || name.ends_with(".zst") {
            return Err(Error::Invalid(format!(
                "gen: the {} layout writes plain JSONL files",
                opts.layout
            )));
        }
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        return Ok(vec![out.to_path_buf()]);
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    Ok((0..opts.files as usize)
        .map(|i| out.join(part_name(i)))
        .collect())
}

/// Writes the rotated or scattered layout (see [`Layout`]).
fn write_spread(opts: &GenOptions, out: &Path) -> Result<GenStats> {
    let paths = spread_paths(opts, out)?;
    let mut stats = GenStats {
        agents: opts.agents,
        files: paths.len() as u32,
        ..Default::default()
    };
    match opts.layout {
        Layout::Rotated => write_rotated(opts, &paths, &mut stats)?,
        _ => write_scattered(opts, &paths, &mut stats)?,
    }
    Ok(stats)
}

fn writers(paths: &[PathBuf]) -> Result<Vec<BufWriter<File>>> {
    let cap = ((8usize << 20) / paths.len()).clamp(8 << 10, 1 << 20);
    paths
        .iter()
        .map(|p| {
            File::create(p)
                .map(|f| BufWriter::with_capacity(cap, f))
                .map_err(|e| Error::io(p, e))
        })
        .collect()
}

/// Rotated: file `k` holds the lines whose time falls in the k-th of `files` equal windows
/// of the days the agents start in (later lines in the last file), in time order (ties in
/// written order). Each line is first written with a sort key to a scratch file next to
/// its part; each part is then sorted in memory and the scratch file removed.
fn write_rotated(opts: &GenOptions, paths: &[PathBuf], stats: &mut GenStats) -> Result<()> {
    let n = paths.len();
    let scratch: Vec<PathBuf> = paths
        .iter()
        .map(|p| {
            let mut s = p.as_os_str().to_owned();
            s.push(".unsorted");
            PathBuf::from(s)
        })
        .collect();
    let mut ws = writers(&scratch)?;
    let span = (SPREAD_DAYS * 86_400_000) as i64;
    let window = (span / n as i64).max(1);
    let mut written: u64 = 0;
    generate(opts, false, |_, r| {
        let mut items: Vec<usize> = (0..r.items.len()).collect();
        // The order ingest reads this agent's lines in: by time, ties in written order.
        items.sort_by_key(|&k| r.items[k].ts);
        stats.add(&expected_in(items.iter().map(|&k| &r.items[k])));
        for it in &r.items {
            let f = (((it.ts - BASE_MS).max(0) / window) as usize).min(n - 1);
            let line = &r.buf.as_bytes()[it.start..it.end];
            let w = &mut ws[f];
            // Key: time and write order, fixed width, then the line.
            write!(w, "{:016x}{:016x}", it.ts as u64, written)
                .and_then(|_| w.write_all(line))
                .and_then(|_| w.write_all(b"\n"))
                .map_err(|e| Error::io(&scratch[f], e))?;
            written += 1;
            stats.bytes += line.len() as u64 + 1;
        }
        stats.lines += r.items.len() as u64;
        Ok(())
    })?;
    for (w, p) in ws.iter_mut().zip(&scratch) {
        w.flush().map_err(|e| Error::io(p, e))?;
    }
    drop(ws);
    for (s, p) in scratch.iter().zip(paths) {
        let text = std::fs::read(s).map_err(|e| Error::io(s, e))?;
        let mut lines: Vec<&[u8]> = text
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        lines.sort_unstable_by(|a, b| a[..32].cmp(&b[..32]));
        let f = File::create(p).map_err(|e| Error::io(p, e))?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        for l in lines {
            w.write_all(&l[32..])
                .and_then(|_| w.write_all(b"\n"))
                .map_err(|e| Error::io(p, e))?;
        }
        w.flush().map_err(|e| Error::io(p, e))?;
        drop(text);
        std::fs::remove_file(s).map_err(|e| Error::io(s, e))?;
    }
    Ok(())
}

/// Scattered: each agent's lines cut into runs of 1 to 5 lines, each run to a file drawn at
/// random; every [`BATCH`] agents, the runs held for each file are shuffled and written.
fn write_scattered(opts: &GenOptions, paths: &[PathBuf], stats: &mut GenStats) -> Result<()> {
    let n = paths.len();
    let mut ws = writers(paths)?;
    // The batch held: per agent its rendering; per file its runs (agent slot, item range).
    let mut held: Vec<Rendered> = Vec::with_capacity(BATCH as usize);
    let mut runs: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); n];
    let mut batch_no: u64 = 0;
    let mut flush = |held: &mut Vec<Rendered>,
                     runs: &mut Vec<Vec<(usize, usize, usize)>>,
                     batch_no: &mut u64,
                     stats: &mut GenStats|
     -> Result<()> {
        let mut order: Vec<Vec<usize>> = vec![Vec::new(); held.len()];
        for (f, file_runs) in runs.iter_mut().enumerate() {
            let mut rng = Rng::new(opts.seed, *batch_no, 3 + f as u64);
            // Fisher–Yates.
            for i in (1..file_runs.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                file_runs.swap(i, j);
            }
            let w = &mut ws[f];
            for &(slot, from, to) in file_runs.iter() {
                let r = &held[slot];
                for k in from..to {
                    let it = &r.items[k];
                    let line = &r.buf.as_bytes()[it.start..it.end];
                    w.write_all(line)
                        .and_then(|_| w.write_all(b"\n"))
                        .map_err(|e| Error::io(&paths[f], e))?;
                    stats.bytes += line.len() as u64 + 1;
                    order[slot].push(k);
                }
            }
            file_runs.clear();
        }
        // Files are read in path order, each from its first line: the order ingest sees.
        for (r, o) in held.iter().zip(&order) {
            stats.lines += r.items.len() as u64;
            stats.add(&expected_in(o.iter().map(|&k| &r.items[k])));
        }
        held.clear();
        *batch_no += 1;
        Ok(())
    };
    generate(opts, false, |index, r| {
        let mut rng = Rng::new(opts.seed, index, 2);
        let slot = held.len();
        let mut from = 0;
        while from < r.items.len() {
            let to = (from + 1 + rng.below(5) as usize).min(r.items.len());
            let f = rng.below(n as u64) as usize;
            runs[f].push((slot, from, to));
            from = to;
        }
        held.push(r);
        if held.len() == BATCH as usize {
            flush(&mut held, &mut runs, &mut batch_no, stats)?;
        }
        Ok(())
    })?;
    if !held.is_empty() {
        flush(&mut held, &mut runs, &mut batch_no, stats)?;
    }
    for (w, p) in ws.iter_mut().zip(paths) {
        w.flush().map_err(|e| Error::io(p, e))?;
    }
    Ok(())
}

/// Agents generated per parallel batch.
const BATCH: u64 = 128;

/// Generates every agent (in parallel batches, on a producer thread) and hands them to
/// `consume` in index order on the calling thread.
fn generate<F>(opts: &GenOptions, split: bool, mut consume: F) -> Result<()>
where
    F: FnMut(u64, Rendered) -> Result<()>,
{
    let (tx, rx) = mpsc::sync_channel::<Vec<Rendered>>(2);
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut start = 0;
            while start < opts.agents {
                let end = opts.agents.min(start.saturating_add(BATCH));
                let batch: Vec<Rendered> = (start..end)
                    .into_par_iter()
                    .map(|i| render(opts, i, split))
                    .collect();
                if tx.send(batch).is_err() {
                    break; // the consumer stopped (a write failed)
                }
                start = end;
            }
        });
        let mut index = 0;
        for batch in rx {
            for r in batch {
                consume(index, r)?;
                index += 1;
            }
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// Deterministic randomness

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64: small, fast, and good enough for test data.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64, index: u64, stream: u64) -> Rng {
        Rng(mix64(seed ^ 0x5851_f42d_4c95_7f2d)
            ^ mix64(index.wrapping_add(0x2545_f491_4f6c_dd1d))
            ^ mix64(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(1)))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (0 when n is 0).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    fn weighted<T: Copy>(&mut self, xs: &[(T, u32)]) -> T {
        let total: u64 = xs.iter().map(|x| x.1 as u64).sum();
        let mut r = self.below(total);
        for &(v, w) in xs {
            if r < w as u64 {
                return v;
            }
            r -= w as u64;
        }
        xs[xs.len() - 1].0
    }

    /// Number of successes before the first failure, each with probability `p`, at most `max`.
    fn geometric(&mut self, p: f64, max: u32) -> u32 {
        let mut n = 0;
        while n < max && self.chance(p) {
            n += 1;
        }
        n
    }

    /// Appends up to 16 random hex digits.
    fn hex(&mut self, digits: usize, out: &mut String) {
        let v = self.next();
        let _ = write!(out, "{:016x}", v);
        out.truncate(out.len() - 16 + digits.min(16));
    }
}

// ---------------------------------------------------------------------------------------
// Line writing

/// 2026-11-01T00:00:00Z, in milliseconds since the epoch.
const BASE_MS: i64 = 1_793_491_200_000;
/// Agents start spread over this many days after the base.
const SPREAD_DAYS: u64 = 5;

/// Appends `s` as a JSON string literal.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
    }
    out.push('"');
}

/// Days since the epoch to (year, month, day) (H. Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn push_ts(out: &mut String, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z"
    );
}

/// One line of an agent: its span in the agent's buffer and what anomalies need.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    seq: u64,
    ts: i64,
    /// A turn-scoped event other than `turn/end`: cutting the log here leaves a turn open.
    mid_turn: bool,
    /// Content identity: the index of the first line with equal content (equal as JSON
    /// values, same root and seq), or `None` for a line that ingest rejects on its own.
    content: Option<usize>,
}

/// The lines of one agent, written into one buffer.
struct Out {
    root: String,
    buf: String,
    lines: Vec<Line>,
    seq: u64,
    ts: i64,
}

impl Out {
    /// Writes one event at the current seq and time. `data` writes the payload object, or
    /// nothing for an event without `data`.
    fn ev(&mut self, session: &str, turn: Option<&str>, ty: &str, data: impl FnOnce(&mut String)) {
        let start = self.buf.len();
        let b = &mut self.buf;
        let _ = write!(b, "{{\"seq\":{},\"ts\":\"", self.seq);
        push_ts(b, self.ts);
        b.push_str("\",\"root\":");
        json_str(b, &self.root);
        b.push_str(",\"session\":");
        json_str(b, session);
        if let Some(t) = turn {
            b.push_str(",\"turn\":");
            json_str(b, t);
        }
        b.push_str(",\"type\":");
        json_str(b, ty);
        let mark = b.len();
        b.push_str(",\"data\":");
        let before = b.len();
        data(b);
        if b.len() == before {
            b.truncate(mark);
        }
        b.push('}');
        self.lines.push(Line {
            start,
            end: self.buf.len(),
            seq: self.seq,
            ts: self.ts,
            mid_turn: turn.is_some() && ty != "turn/end",
            content: Some(self.lines.len()),
        });
        self.seq += 1;
        self.ts += 1;
    }

    fn ev0(&mut self, session: &str, turn: Option<&str>, ty: &str) {
        self.ev(session, turn, ty, |_| {});
    }

    fn text(&mut self, session: &str, turn: Option<&str>, ty: &str, text: &str) {
        self.ev(session, turn, ty, |d| {
            d.push_str("{\"text\":");
            json_str(d, text);
            d.push('}');
        });
    }
}

// ---------------------------------------------------------------------------------------
// Vocabulary

const MODELS: &[(&str, bool, u32)] = &[
    ("gpt-5.1", true, 30),
    ("gpt-5.1-mini", true, 15),
    ("claude-sonnet-4.5", true, 25),
    ("claude-haiku-4.5", false, 10),
    ("gemini-2.5-pro", true, 12),
    ("llama-4-maverick", false, 5),
    ("mistral-large-2", false, 3),
];

const WORDS: &[&str] = &[
    "I",
    "I'll",
    "the",
    "the",
    "the",
    "a",
    "to",
    "to",
    "and",
    "and",
    "of",
    "in",
    "is",
    "it",
    "this",
    "that",
    "file",
    "function",
    "test",
    "tests",
    "config",
    "module",
    "error",
    "value",
    "check",
    "update",
    "fix",
    "run",
    "found",
    "looks",
    "like",
    "should",
    "now",
    "first",
    "then",
    "change",
    "changes",
    "pass",
    "passing",
    "failing",
    "because",
    "with",
    "for",
    "on",
    "from",
    "we",
    "you",
    "your",
    "can",
    "will",
    "need",
    "add",
    "remove",
    "rename",
    "handler",
    "request",
    "response",
    "parser",
    "query",
    "table",
    "index",
    "cache",
    "timeout",
    "retry",
    "build",
    "deploy",
    "branch",
    "commit",
    "diff",
    "line",
    "lines",
    "field",
    "struct",
    "type",
    "return",
    "returns",
    "input",
    "output",
    "API",
    "endpoint",
    "user",
    "data",
    "schema",
    "migration",
    "`cargo test`",
    "`src/lib.rs`",
    "`parse_config`",
    "`README.md`",
    "`main.py`",
    "`npm run build`",
    "done.",
    "here's",
    "summary:",
    "Next,",
    "Also,",
    "However,",
    "so",
    "but",
    "which",
    "where",
];

const THINK_WORDS: &[&str] = &[
    "The", "user", "wants", "me", "to", "so", "I", "should", "first", "look", "at", "maybe", "the",
    "error", "comes", "from", "probably", "check", "whether", "the", "config", "is", "loaded",
    "before", "tests", "run", "hmm", "wait", "actually", "that", "means", "let's", "consider",
    "option", "another", "approach", "would", "be", "to", "read", "the", "file", "and", "compare",
    "with", "expected", "output", "edge", "case", "empty", "input", "ok",
];

const PROGRESS: &[&str] = &[
    "Reading the repository layout",
    "Running the test suite",
    "Searching for usages of `parse_config`",
    "Applying the patch to 3 files",
    "Waiting for the build to finish",
    "Summarizing the findings",
    "Checking the deployment status",
    "Fetching the latest issue comments",
    "Comparing the benchmark results",
    "Drafting the reply",
];

const LOG_MESSAGES: &[(&str, &str)] = &[
    ("debug", "prompt cache hit"),
    ("debug", "context window usage below threshold"),
    ("info", "tool sandbox ready"),
    ("info", "model call dispatched"),
    ("info", "checkpoint saved"),
    ("info", "streaming response started"),
    ("warn", "slow tool call"),
    ("warn", "retrying model call after backoff"),
    ("warn", "context window above 80%"),
    ("error", "hook post_tool returned a non-zero status"),
];

const SUB_NAMES: &[&str] = &[
    "researcher",
    "coder",
    "reviewer",
    "planner",
    "browser",
    "tester",
];

const UNKNOWN_TYPES: &[&str] = &[
    "compaction/start",
    "compaction/end",
    "hook/run",
    "checkpoint/saved",
    "memory/write",
    "usage/report",
];

/// A tool the agents call: name, weight, and what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolKind {
    Plain,
    /// Needs an approval callback.
    Approval,
    /// Runs on the client: a `client_tool_call` callback.
    Client,
    /// Needs a sign-in the first time.
    SignIn,
    /// Spawns a subagent.
    Delegate,
}

const TOOLS: &[(&str, ToolKind, u32)] = &[
    ("fs.read_file", ToolKind::Plain, 22),
    ("fs.write_file", ToolKind::Approval, 8),
    ("fs.list_dir", ToolKind::Plain, 8),
    ("code.search", ToolKind::Plain, 12),
    ("shell.exec", ToolKind::Approval, 10),
    ("web.search", ToolKind::Plain, 8),
    ("web.fetch", ToolKind::Plain, 5),
    ("git.diff", ToolKind::Plain, 4),
    ("db.query", ToolKind::Plain, 3),
    ("calendar.create_event", ToolKind::SignIn, 2),
    ("github.create_pr", ToolKind::SignIn, 2),
    ("client.get_weather", ToolKind::Client, 2),
    ("client.get_location", ToolKind::Client, 2),
    ("client.open_file_picker", ToolKind::Client, 1),
    ("agent.delegate", ToolKind::Delegate, 5),
];

const PATHS: &[&str] = &[
    "src/lib.rs",
    "src/main.rs",
    "src/config.rs",
    "tests/integration.rs",
    "README.md",
    "Cargo.toml",
    "app/models/user.py",
    "web/src/App.tsx",
    "docs/setup.md",
    "migrations/0007_add_index.sql",
];

const COMMANDS: &[&str] = &[
    "cargo test --all",
    "cargo build --release",
    "npm run build",
    "pytest -x tests/",
    "git status --short",
    "make lint",
    "ls -la",
];

const QUERIES: &[&str] = &[
    "rust serde flatten enum",
    "postgres index only scan",
    "react useEffect cleanup",
    "how to rotate api keys",
    "latest release notes",
    "timezone conversion utc",
];

// ---------------------------------------------------------------------------------------
// Errors

/// A recorded Error (EVENTS.md) to write.
#[derive(Debug, Clone)]
struct ErrSpec {
    code: Option<&'static str>,
    message: String,
    retryable: bool,
    status: Option<u16>,
    reason: Option<&'static str>,
    request_id: bool,
}

impl ErrSpec {
    fn write(&self, rng_hex: &str, out: &mut String) {
        out.push_str("{\"code\":");
        match self.code {
            Some(c) => json_str(out, c),
            None => out.push_str("null"),
        }
        out.push_str(",\"message\":");
        json_str(out, &self.message);
        let _ = write!(out, ",\"retryable\":{}", self.retryable);
        out.push_str(",\"details\":");
        if self.status.is_none() && self.reason.is_none() && !self.request_id {
            out.push_str("null");
        } else {
            let mut first = true;
            out.push('{');
            if let Some(s) = self.status {
                let _ = write!(out, "\"http_status\":{s}");
                first = false;
            }
            if let Some(r) = self.reason {
                if !first {
                    out.push(',');
                }
                out.push_str("\"reason\":");
                json_str(out, r);
                first = false;
            }
            if self.request_id {
                if !first {
                    out.push(',');
                }
                let _ = write!(out, "\"request_id\":\"req_{rng_hex}\"");
            }
            out.push('}');
        }
        out.push('}');
    }
}

/// How a turn is to end.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    /// A Completed kind without stop reason.
    Completed(&'static str),
    /// A Completed kind that is a stop reason.
    Stop(&'static str),
    Interrupted {
        kind: &'static str,
        cause: Cause,
        /// A `session/end` cancelled comes before the turn's end (subagents).
        session_cancel: bool,
    },
    /// A Failed kind; `model` when the error is a model call's (else a turn-level one).
    Failed {
        kind: &'static str,
        model: bool,
    },
    Unknown(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cause {
    None,
    Given(&'static str),
    /// The harness nests it: `reason.reason.kind`.
    Nested(&'static str),
}

/// How an unsettled agent's log ends inside its last interval.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    /// In the middle of a turn's stream.
    Streaming,
    /// A turn blocked on an unanswered callback.
    Blocked,
    /// After the last turn's end, before the idle.
    AfterEnd,
}

#[derive(Debug, Default)]
struct TurnOut {
    /// The log ended inside the turn.
    open: bool,
    /// Queued messages received during the turn: each asks for one more turn.
    queued: u32,
    /// The turn ended Failed or Interrupted.
    bad: bool,
}

// ---------------------------------------------------------------------------------------
// The generator of one agent

/// The knobs of the persisted mix (where it differs from the delta mix).
struct Persisted {
    /// Geometric parameter of the intervals after the first.
    intervals: f64,
    /// Geometric parameter of a root turn's steps after the first.
    steps: f64,
    /// Chance of one reasoning delta per step (reasoning models).
    reasoning: f64,
    /// Text deltas of a turn's last step and of the other steps (inclusive ranges).
    last_text: (u64, u64),
    step_text: (u64, u64),
    /// Geometric parameter of the tool calls of a step after the first.
    more_calls: f64,
    /// Weight factor of delegating to a subagent at the root.
    delegate: u32,
    /// A persisted delta holds this many streamed deltas' text.
    delta_scale: usize,
}

const PERSISTED: Persisted = Persisted {
    intervals: 0.66,
    steps: 0.47,
    reasoning: 0.4,
    last_text: (1, 2),
    step_text: (0, 1),
    more_calls: 0.15,
    delegate: 3,
    delta_scale: 2,
};

struct Gen {
    rng: Rng,
    /// Anomaly decisions: a separate stream, so the base log is the same at any rate.
    arng: Rng,
    rate: f64,
    out: Out,
    model: &'static str,
    reasoning: bool,
    next_turn: u32,
    next_sub: u32,
    next_msg: u32,
    /// Tokens in the model's context: grows with the conversation.
    ctx: u64,
    malformed_ends: bool,
    scratch: String,
    /// The persisted mix ([`Mix::Persisted`]): fewer deltas, steps and intervals.
    persisted: bool,
}

/// One agent, rendered: all lines in one buffer, in written order.
struct Rendered {
    buf: String,
    items: Vec<Item>,
    /// What ingest must make of these lines.
    expected: Expected,
}

/// Ingest's accounting of one agent's lines (SEMANTICS.md §1, §7).
#[derive(Debug, Clone, Copy, Default)]
struct Expected {
    kept: u64,
    duplicates: u64,
    rejects: u64,
}

/// What an extra line (not a generated event) holds.
#[derive(Debug, Clone, Copy)]
enum Content {
    /// A new event content: a conflicting variant.
    New,
    /// The same content as this line (re-serialized).
    SameAs(usize),
    /// A line ingest rejects by itself.
    Bad,
}

#[derive(Debug, Clone, Copy)]
struct Item {
    start: usize,
    end: usize,
    /// Written to the agent's second file (folders only).
    second: bool,
    /// The line's seq and time (for the other layouts).
    seq: u64,
    ts: i64,
    /// Its content identity (`Line::content`).
    content: Option<usize>,
}

/// Ingest's accounting of one agent's items in the order ingest reads them (§1, §7), as
/// `Gen::expected` does.
fn expected_in<'a>(items: impl Iterator<Item = &'a Item>) -> Expected {
    let mut e = Expected::default();
    let mut kept: Vec<Option<usize>> = Vec::new();
    for it in items {
        let Some(content) = it.content else {
            e.rejects += 1;
            continue;
        };
        let k = it.seq as usize;
        if kept.len() <= k {
            kept.resize(k + 1, None);
        }
        match &mut kept[k] {
            slot @ None => {
                *slot = Some(content);
                e.kept += 1;
            }
            Some(c) if *c == content => e.duplicates += 1,
            Some(_) => e.rejects += 1,
        }
    }
    e
}

fn render(opts: &GenOptions, index: u64, split: bool) -> Rendered {
    let mut rng = Rng::new(opts.seed, index, 0);
    let mut arng = Rng::new(opts.seed, index, 1);
    let rate = opts.rate();
    let root = format!("ag-{:x}-{:06}", opts.seed, index);
    let start = BASE_MS + rng.below(SPREAD_DAYS * 86_400_000) as i64;
    let (model, reasoning) = rng.weighted(
        &MODELS
            .iter()
            .map(|&(m, r, w)| ((m, r), w))
            .collect::<Vec<_>>(),
    );
    let malformed_ends = rate > 0.0 && arng.chance(0.12 * rate);
    let mut g = Gen {
        rng,
        arng,
        rate,
        out: Out {
            root,
            buf: String::with_capacity(48 << 10),
            lines: Vec::with_capacity(256),
            seq: 1,
            ts: start,
        },
        model,
        reasoning,
        next_turn: 0,
        next_sub: 0,
        next_msg: 0,
        ctx: 0,
        malformed_ends,
        scratch: String::with_capacity(1024),
        persisted: opts.mix == Mix::Persisted,
    };
    g.agent();
    // Ingest reads files in byte order of their paths: the agent's second file comes first
    // when its name sorts before the first's (file 0 after the last one).
    let second_first = if split {
        let n = opts.files.max(1) as usize;
        let first = (index % n as u64) as usize;
        let second = (first + 1) % n;
        (first != second).then(|| part_name(second) < part_name(first))
    } else {
        None
    };
    g.finish(split, second_first)
}

impl Gen {
    fn wait(&mut self, lo: u64, hi: u64) {
        self.out.ts += self.rng.range(lo, hi) as i64;
    }

    fn root(&self) -> String {
        self.out.root.clone()
    }

    fn new_turn(&mut self) -> String {
        self.next_turn += 1;
        format!("t-{:04}", self.next_turn)
    }

    fn id(&mut self, prefix: &str, digits: usize) -> String {
        let mut s = String::with_capacity(prefix.len() + digits);
        s.push_str(prefix);
        self.rng.hex(digits, &mut s);
        s
    }

    /// Words joined with spaces, about `target` characters long.
    fn words(&mut self, vocab: &[&str], target: usize, out: &mut String) {
        let start = out.len();
        while out.len() - start < target {
            let w = self.rng.pick(vocab);
            out.push_str(w);
            let r = self.rng.below(100);
            if r < 3 {
                out.push_str(".\n\n");
            } else if r < 8 {
                out.push_str(". ");
            } else if r < 10 {
                out.push_str(", ");
            } else if r == 10 {
                out.push_str(" — ");
            } else {
                out.push(' ');
            }
        }
    }

    /// Length of a delta: 5..=80 characters, mostly short.
    fn delta_len(&mut self) -> usize {
        5 + self
            .rng
            .below(76)
            .min(self.rng.below(76))
            .min(self.rng.below(76)) as usize
    }

    /// Streams `n` deltas of `ty`; returns their joined text when `keep`.
    fn deltas(
        &mut self,
        session: &str,
        turn: Option<&str>,
        ty: &str,
        n: u32,
        keep: bool,
    ) -> String {
        let mut all = String::new();
        let vocab = if ty == "reasoning/delta" {
            THINK_WORDS
        } else {
            WORDS
        };
        for _ in 0..n {
            let mut t = std::mem::take(&mut self.scratch);
            t.clear();
            let len = if self.persisted {
                self.delta_len() * PERSISTED.delta_scale
            } else {
                self.delta_len()
            };
            self.words(vocab, len, &mut t);
            self.wait(15, 260);
            self.out.text(session, turn, ty, &t);
            if keep {
                all.push_str(&t);
            }
            self.scratch = t;
        }
        all
    }

    fn progress(&mut self, session: &str, turn: Option<&str>) {
        let p = self.rng.pick(PROGRESS);
        self.wait(5, 400);
        self.out.text(session, turn, "progress", p);
    }

    fn log(&mut self, session: &str, turn: Option<&str>) {
        let (level, msg) = self.rng.pick(LOG_MESSAGES);
        let ms = self.rng.range(3, 4000);
        self.wait(1, 50);
        self.out.ev(session, turn, "log", |d| {
            d.push_str("{\"level\":");
            json_str(d, level);
            d.push_str(",\"message\":");
            json_str(d, msg);
            let _ = write!(d, ",\"elapsed_ms\":{ms}}}");
        });
    }

    fn unknown_event(&mut self, session: &str, turn: Option<&str>) {
        let ty = self.rng.pick(UNKNOWN_TYPES);
        let n = self.rng.range(1000, 90_000);
        self.wait(1, 300);
        self.out.ev(session, turn, ty, |d| {
            let _ = write!(d, "{{\"tokens\":{n},\"version\":2}}");
        });
    }

    fn receipt(&mut self, kind: &str) {
        let root = self.root();
        self.next_msg += 1;
        let mut id = format!("msg-{:04}-", self.next_msg);
        self.rng.hex(8, &mut id);
        self.out.ev(&root, None, "inbox/receipt", |d| {
            d.push_str("{\"message_id\":");
            json_str(d, &id);
            d.push_str(",\"kind\":");
            json_str(d, kind);
            d.push('}');
        });
    }

    fn session_start(&mut self, session: &str, parent: Option<(&str, &str)>, name: &str) {
        let model = self.model;
        self.out
            .ev(session, None, "session/start", |d| match parent {
                None => {
                    d.push_str("{\"parent\":null,\"parent_turn\":null,\"name\":");
                    json_str(d, name);
                    d.push_str(",\"model\":");
                    json_str(d, model);
                    d.push('}');
                }
                Some((p, pt)) => {
                    d.push_str("{\"parent\":");
                    json_str(d, p);
                    d.push_str(",\"parent_turn\":");
                    json_str(d, pt);
                    d.push_str(",\"name\":");
                    json_str(d, name);
                    d.push_str(",\"model\":");
                    json_str(d, model);
                    d.push('}');
                }
            });
    }

    fn session_end(&mut self, session: &str, status: &str) {
        self.wait(5, 200);
        self.out.ev(session, None, "session/end", |d| {
            d.push_str("{\"status\":");
            json_str(d, status);
            d.push('}');
        });
    }

    // -- the agent ------------------------------------------------------------------------

    fn agent(&mut self) {
        let root = self.root();
        let name = self
            .rng
            .pick(&["assistant", "coding-agent", "support-bot", "ops-agent"]);
        self.ctx = self.rng.range(1200, 9000);
        self.session_start(&root, None, name);
        if self.persisted {
            // No runner streams; fewer conversations.
            let intervals = 1 + self.rng.geometric(PERSISTED.intervals, 24);
            self.intervals(&root, intervals);
            return;
        }
        if self.rng.chance(0.12) {
            self.runner_agent();
            return;
        }
        let intervals = 1 + self.rng.geometric(0.74, 24);
        self.intervals(&root, intervals);
    }

    fn intervals(&mut self, root: &str, intervals: u32) {
        let unsettled = self.rng.chance(0.08);
        for k in 0..intervals {
            if k > 0 {
                // Between conversations: a minute to a few hours.
                let gap = if self.rng.chance(0.7) {
                    self.rng.range(30_000, 1_800_000)
                } else {
                    self.rng.range(1_800_000, 14_400_000)
                };
                self.out.ts += gap as i64;
            } else {
                self.wait(50, 5000);
            }
            if self.rng.chance(0.015) {
                // A stray idle: no interval open.
                self.out.ev0(root, None, "agent/idle");
                self.wait(100, 5000);
            }
            let open = (unsettled && k + 1 == intervals).then(|| {
                self.rng.weighted(&[
                    (Open::Streaming, 4),
                    (Open::Blocked, 3),
                    (Open::AfterEnd, 3),
                ])
            });
            self.interval(root, open);
        }
        if !unsettled && self.rng.chance(0.15) {
            self.session_end(root, "closed");
        }
    }

    fn interval(&mut self, root: &str, open: Option<Open>) {
        self.receipt("prompt");
        self.ctx += self.rng.range(40, 900);
        if open.is_none() && self.rng.chance(0.01) {
            // Handled without a turn (e.g. a duplicate prompt).
            self.wait(20, 400);
            self.out.ev0(root, None, "agent/idle");
            return;
        }
        if self.rng.chance(0.03) {
            self.wait(50, 2000);
            self.receipt("queued");
        }
        let mut pending = 1u32;
        let mut prev_turn: Option<String> = None;
        while pending > 0 {
            pending -= 1;
            if let Some(prev) = &prev_turn {
                if self.rng.chance(0.08) {
                    // A client acted on the turn that just ended.
                    self.wait(10, 500);
                    self.out.ev(root, None, "turn/conflict", |d| {
                        d.push_str("{\"expected_turn\":");
                        json_str(d, prev);
                        d.push_str(",\"active_turn\":null}");
                    });
                }
            }
            let last_open = if pending == 0 { open } else { None };
            let cut = last_open.filter(|o| *o != Open::AfterEnd);
            // A turn the log ends in is planned to run on (it never reaches its end).
            let end = match cut {
                Some(_) => End::Completed("completed"),
                None => self.pick_end(true),
            };
            let (t, r) = self.turn(root, 0, end, cut);
            if r.open {
                return;
            }
            pending += r.queued;
            prev_turn = Some(t);
            if r.bad && pending == 0 && self.rng.chance(0.25) {
                // The user tries again after a failure or an interruption.
                self.wait(2000, 60_000);
                self.receipt("steer");
                pending += 1;
            }
        }
        if open == Some(Open::AfterEnd) {
            return;
        }
        self.wait(20, 600);
        if self.rng.chance(0.004) {
            // `"data":null` is as good as absent: some runtimes write it.
            self.out
                .ev(root, None, "agent/idle", |d| d.push_str("null"));
        } else {
            self.out.ev0(root, None, "agent/idle");
        }
    }

    fn pick_end(&mut self, root: bool) -> End {
        let class = if root {
            self.rng
                .weighted(&[(0u8, 780), (1, 80), (2, 70), (3, 45), (4, 12)])
        } else {
            self.rng
                .weighted(&[(0u8, 880), (1, 40), (2, 30), (3, 35), (4, 8)])
        };
        match class {
            0 => End::Completed(self.rng.weighted(&[
                ("completed", 90),
                ("end_turn", 5),
                ("task_complete", 3),
                ("COMPLETED", 2),
            ])),
            1 => End::Stop(self.rng.weighted(&[
                ("max_tokens", 45),
                ("refusal", 12),
                ("incomplete", 12),
                ("skipped", 10),
                ("blocked", 8),
                ("stop_sequence", 8),
                ("max-tokens", 5),
            ])),
            2 => {
                let kind = self.rng.weighted(&[
                    ("cancelled", 38),
                    ("interrupted", 25),
                    ("replaced", 12),
                    ("aborted", 10),
                    ("budget_limited", 6),
                    ("review_ended", 5),
                    ("CANCELLED", 4),
                ]);
                let cause = match self.rng.below(10) {
                    0..=4 => Cause::Given(self.rng.pick(&[
                        "user_cancel",
                        "client_disconnected",
                        "steer",
                        "timeout",
                        "shutdown",
                        "superseded",
                    ])),
                    5 => Cause::Nested(self.rng.pick(&["user_stop", "deadline", "new_message"])),
                    _ => Cause::None,
                };
                End::Interrupted {
                    kind,
                    cause,
                    session_cancel: false,
                }
            }
            3 => End::Failed {
                kind: self
                    .rng
                    .weighted(&[("error", 75), ("failed", 20), ("FAILED", 5)]),
                model: self.rng.chance(0.55),
            },
            _ => End::Unknown(self.rng.pick(&[
                "paused_for_review",
                "handoff",
                "deferred",
                "awaiting_input",
            ])),
        }
    }

    /// A model error as a provider would return it (codes of SEMANTICS.md §4).
    fn model_error(&mut self) -> ErrSpec {
        let code = self.rng.weighted(&[
            ("completion_unavailable", 300),
            ("completion_rate_limited", 240),
            ("completion_timed_out", 120),
            ("completion_failed", 100),
            ("completion_context_too_large", 60),
            ("completion_rejected", 40),
            ("completion_unauthorized", 15),
            ("completion_billing_denied", 15),
            ("completion_failed_permanently", 15),
            ("turn_failed", 10),
            ("remote_session_failed", 8),
            ("", 10),
        ]);
        let mut e = ErrSpec {
            code: Some(code),
            message: String::new(),
            retryable: true,
            status: None,
            reason: None,
            request_id: self.rng.chance(0.4),
        };
        match code {
            "completion_unavailable" => {
                let s = self.rng.weighted(&[
                    (Some(503u16), 50),
                    (Some(502), 15),
                    (Some(500), 12),
                    (Some(529), 10),
                    (Some(504), 6),
                    (None, 5),
                    (Some(409), 2),
                ]);
                e.status = s;
                e.message = match s {
                    Some(503) => "503 Service Unavailable: the model is overloaded".into(),
                    Some(502) => "502 Bad Gateway".into(),
                    Some(500) => "500 Internal Server Error".into(),
                    Some(529) => "529 Overloaded".into(),
                    Some(504) => "504 Gateway Timeout".into(),
                    Some(409) => "409 Conflict: deployment is being updated".into(),
                    _ => "no capacity available for this model".into(),
                };
            }
            "completion_rate_limited" => {
                e.status = Some(429);
                let secs = self.rng.range(1, 60);
                e.message = format!(
                    "Rate limit reached for requests per minute. Please try again in {secs}s."
                );
            }
            "completion_timed_out" => {
                if self.rng.chance(0.3) {
                    e.reason = Some("time_limit");
                    e.retryable = false;
                    e.message = "model call exceeded its time limit of 600s".into();
                } else if self.rng.chance(0.5) {
                    e.status = Some(408);
                    e.message = "408 Request Timeout".into();
                } else if self.rng.chance(0.15) {
                    // A gateway's timeout, filed under timed_out: not a status the code carries.
                    e.status = Some(504);
                    e.message = "504 Gateway Timeout".into();
                } else {
                    e.message = "the model stalled: no tokens for 120s".into();
                }
            }
            "completion_failed" => {
                e.message = self
                    .rng
                    .pick(&[
                        "stream ended before the response completed",
                        "connection reset by peer",
                        "unexpected EOF while reading the response",
                    ])
                    .into();
            }
            "completion_context_too_large" => {
                let r = self.rng.below(10);
                e.reason = match r {
                    0..=1 => Some("after_compaction"),
                    2 => Some("minimal_summary_request"),
                    _ => None,
                };
                e.retryable = e.reason.is_some();
                e.status = self
                    .rng
                    .weighted(&[(Some(400u16), 6), (Some(413), 2), (None, 2)]);
                let n = self.ctx.max(128_000) + self.rng.range(1, 60_000);
                e.message = format!("prompt is too long: {n} tokens > 128000 maximum");
            }
            "completion_rejected" => {
                e.retryable = false;
                e.status = self
                    .rng
                    .weighted(&[(Some(400u16), 6), (Some(422), 2), (Some(404), 1)]);
                e.message = match e.status {
                    Some(404) => "404 model not found".into(),
                    Some(422) => {
                        "422 invalid tool schema: parameters.properties must be an object".into()
                    }
                    _ => "400 invalid request: messages[3].content must not be empty".into(),
                };
            }
            "completion_unauthorized" => {
                e.retryable = false;
                e.status = self.rng.weighted(&[(Some(401u16), 3), (Some(403), 1)]);
                e.message = if e.status == Some(401) {
                    "401 invalid API key".into()
                } else {
                    "403 this project has no access to the model".into()
                };
            }
            "completion_billing_denied" => {
                e.retryable = false;
                e.status = self
                    .rng
                    .weighted(&[(Some(402u16), 2), (Some(429), 1), (None, 1)]);
                e.message = "monthly budget exhausted for this workspace".into();
            }
            "completion_failed_permanently" => {
                e.retryable = false;
                e.message = "the provider closed the stream with a fatal error".into();
            }
            "turn_failed" => {
                e.retryable = self.rng.chance(0.5);
                e.status = self.rng.weighted(&[(None, 3), (Some(500u16), 1)]);
                e.message = "the served agent reported an error".into();
            }
            "remote_session_failed" => {
                e.retryable = false;
                e.status = self
                    .rng
                    .weighted(&[(None, 3), (Some(500u16), 1), (Some(410), 1)]);
                e.message = "the remote session failed and has ended".into();
            }
            _ => {
                // A code the table does not know, or none.
                e.code = self
                    .rng
                    .pick(&[None, Some("provider_error"), Some("overloaded_error")]);
                e.status = self.rng.weighted(&[(None, 1), (Some(500u16), 1)]);
                e.retryable = self.rng.chance(0.5);
                e.message = "unexpected provider error".into();
            }
        }
        // Now and then the recorded flag disagrees with the documented rule.
        if self.rng.chance(0.04) {
            e.retryable = !e.retryable;
        }
        // And now and then a status that the code should not carry.
        if e.status.is_none() && code == "completion_failed" && self.rng.chance(0.1) {
            e.status = Some(500);
        }
        e
    }

    /// An error that fails a turn without a model call's error.
    fn turn_error(&mut self) -> ErrSpec {
        let code = self.rng.weighted(&[
            ("tool_raised", 20),
            ("capability_execution_failed", 15),
            ("turn_failed", 15),
            ("tool_output_schema_mismatch", 12),
            ("invalid_compaction_summary", 8),
            ("compaction_request_too_large", 8),
            ("compaction_replacement_too_large", 8),
            ("completion_billing_denied", 8),
            ("remote_session_failed", 6),
        ]);
        let (message, status): (&str, Option<u16>) = match code {
            "tool_raised" => (
                "tool shell.exec raised: CalledProcessError(returncode=2)",
                None,
            ),
            "capability_execution_failed" => (
                "hook post_tool raised: state too large (3.1 MB > 1 MB)",
                None,
            ),
            "turn_failed" => (
                "the agent raised an unhandled exception",
                self.rng.pick(&[None, Some(500)]),
            ),
            "tool_output_schema_mismatch" => (
                "tool db.query returned data that does not match its output schema",
                None,
            ),
            "invalid_compaction_summary" => ("the compaction summary was empty", None),
            "compaction_request_too_large" => ("the history is too large to compact", None),
            "compaction_replacement_too_large" => {
                ("summary plus pinned context exceed the window", None)
            }
            "completion_billing_denied" => ("budget spent", self.rng.pick(&[None, Some(402)])),
            _ => ("the remote session failed and has ended", None),
        };
        ErrSpec {
            code: Some(code),
            message: message.into(),
            retryable: code == "turn_failed" && self.rng.chance(0.3),
            status,
            reason: None,
            request_id: false,
        }
    }

    /// A model call that ends: writes `model/end` with usage.
    fn model_end(
        &mut self,
        session: &str,
        turn: &str,
        finish: &str,
        out_tokens: u64,
        started: i64,
    ) {
        let input = self.ctx;
        let cached = if self.rng.chance(0.75) {
            input * self.rng.range(40, 95) / 100
        } else {
            0
        };
        let reasoning = if self.reasoning {
            out_tokens * self.rng.range(10, 70) / 100
        } else {
            0
        };
        let cache_write = if self.rng.chance(0.15) {
            self.rng.range(500, 4000)
        } else {
            0
        };
        self.wait(20, 400);
        let dur = (self.out.ts - started).max(1);
        let verbose = self.rng.chance(0.8);
        self.out.ev(session, Some(turn), "model/end", |d| {
            d.push_str("{\"finish_reason\":");
            json_str(d, finish);
            let _ = write!(
                d,
                ",\"usage\":{{\"input_tokens\":{input},\"output_tokens\":{out_tokens},\"total_tokens\":{}",
                input + out_tokens
            );
            if verbose || cached > 0 {
                let _ = write!(d, ",\"cached_input_tokens\":{cached}");
            }
            if verbose {
                let _ = write!(
                    d,
                    ",\"cache_write_tokens\":{cache_write},\"reasoning_tokens\":{reasoning}"
                );
            }
            let _ = write!(d, "}},\"duration_ms\":{dur}}}");
        });
        self.ctx += out_tokens;
    }

    fn model_error_event(&mut self, session: &str, turn: &str, e: &ErrSpec, started: i64) {
        self.wait(100, 3000);
        let dur = (self.out.ts - started).max(1);
        let mut hex = String::with_capacity(12);
        self.rng.hex(12, &mut hex);
        self.out.ev(session, Some(turn), "model/end", |d| {
            d.push_str("{\"error\":");
            e.write(&hex, d);
            let _ = write!(d, ",\"duration_ms\":{dur}}}");
        });
    }

    /// Model errors before a call succeeds (now and then), each retried after a backoff.
    /// Returns the error that ends the turn: one the runtime does not retry, the fourth in
    /// a row, or with `fail_after = Some(k)` the k-th (the turn is meant to fail).
    fn retried_errors(
        &mut self,
        session: &str,
        turn: &str,
        fail_after: Option<usize>,
    ) -> Option<ErrSpec> {
        let mut tries = 0;
        loop {
            if fail_after.is_none() && !self.rng.chance(0.045) {
                return None;
            }
            let e = self.model_error();
            let started = self.out.ts;
            if e.code == Some("completion_failed") && self.rng.chance(0.6) {
                // The stream broke after some text.
                let n = self.rng.range(1, 4) as u32;
                self.deltas(session, Some(turn), "text/delta", n, false);
            }
            self.model_error_event(session, turn, &e, started);
            tries += 1;
            if !e.retryable || tries >= 4 || fail_after == Some(tries) {
                return Some(e);
            }
            if self.rng.chance(0.3) {
                self.log(session, Some(turn));
            }
            // Backoff before the retry.
            let backoff = 500u64 << tries.min(5);
            self.wait(backoff, backoff * 3);
        }
    }

    /// One turn of `session` at `depth` (0 = root). Returns its id and what happened.
    fn turn(
        &mut self,
        session: &str,
        depth: u32,
        end: End,
        open: Option<Open>,
    ) -> (String, TurnOut) {
        let turn = self.new_turn();
        let is_root = depth == 0;
        let mut out = TurnOut::default();
        self.wait(5, 80);
        self.out.ev0(session, Some(&turn), "turn/start");
        let steps = 1 + match end {
            End::Interrupted { .. } => self.rng.geometric(0.5, 6),
            End::Failed { .. } => self.rng.geometric(0.45, 5),
            _ if depth > 0 => self.rng.geometric(0.45, 5),
            _ if self.persisted => self.rng.geometric(PERSISTED.steps, 14),
            _ => self.rng.geometric(0.66, 14),
        };
        if self.rng.chance(0.15) {
            self.progress(session, Some(&turn));
        }
        let mut failure: Option<ErrSpec> = None;
        let mut final_text = String::new();
        let mut busy_done = false;
        'steps: for step in 0..steps {
            let last = step + 1 == steps;
            if is_root && step > 0 && self.rng.chance(0.06) {
                self.wait(200, 20_000);
                let kind = self
                    .rng
                    .weighted(&[("steer", 5), ("context", 3), ("queued", 3)]);
                if kind == "queued" {
                    if !busy_done && self.rng.chance(0.6) {
                        // The client first tried to start a new turn.
                        let root = self.root();
                        let t = turn.clone();
                        self.out.ev(&root, None, "turn/busy", |d| {
                            d.push_str("{\"active_turn\":");
                            json_str(d, &t);
                            d.push('}');
                        });
                        busy_done = true;
                    }
                    out.queued += 1;
                }
                self.receipt(kind);
            }
            if is_root && self.rng.chance(0.01) {
                let root = self.root();
                let t = turn.clone();
                let stale = format!("t-{:04}", self.next_turn.saturating_sub(1).max(1));
                self.out.ev(&root, None, "turn/conflict", |d| {
                    d.push_str("{\"expected_turn\":");
                    json_str(d, &stale);
                    d.push_str(",\"active_turn\":");
                    json_str(d, &t);
                    d.push('}');
                });
            }
            if self.rng.chance(0.02) {
                self.unknown_event(session, Some(&turn));
            }
            let model_fail = last && matches!(end, End::Failed { model: true, .. });
            let fail_after = model_fail.then(|| 1 + self.rng.below(4) as usize);
            if let Some(e) = self.retried_errors(session, &turn, fail_after) {
                failure = Some(e);
                break 'steps;
            }
            let started = self.out.ts;
            self.wait(200, 2500); // time to first token
            if self.persisted {
                if self.reasoning && self.rng.chance(PERSISTED.reasoning) {
                    self.deltas(session, Some(&turn), "reasoning/delta", 1, false);
                }
            } else if self.reasoning && self.rng.chance(0.6) {
                let n = self.rng.range(1, 10) as u32;
                self.deltas(session, Some(&turn), "reasoning/delta", n, false);
            }
            if last && open == Some(Open::Streaming) {
                let n = self.rng.range(1, 8) as u32;
                self.deltas(session, Some(&turn), "text/delta", n, false);
                out.open = true;
                return (turn, out);
            }
            let interrupted = matches!(end, End::Interrupted { .. });
            let n_text = match (self.persisted, last) {
                (true, true) => self.rng.range(PERSISTED.last_text.0, PERSISTED.last_text.1) as u32,
                (true, false) => {
                    self.rng.range(PERSISTED.step_text.0, PERSISTED.step_text.1) as u32
                }
                (false, true) => self.rng.range(4, 30) as u32,
                (false, false) => self.rng.range(1, 8) as u32,
            };
            if last && interrupted {
                let n = self.rng.range(0, n_text as u64) as u32;
                self.deltas(session, Some(&turn), "text/delta", n, false);
                if self.rng.chance(0.3) {
                    // Stopped while a tool ran: a call without a result.
                    let out_tokens = self.rng.range(20, 200);
                    self.model_end(session, &turn, "tool_calls", out_tokens, started);
                    let call_id = self.id("call_", 16);
                    self.wait(5, 50);
                    self.out.ev(session, Some(&turn), "tool/call", |d| {
                        d.push_str("{\"call_id\":");
                        json_str(d, &call_id);
                        d.push_str(",\"name\":\"shell.exec\",\"arguments\":{\"command\":\"npm run build\"}}");
                    });
                    self.wait(1000, 30_000);
                }
                break 'steps;
            }
            let text = self.deltas(session, Some(&turn), "text/delta", n_text, last);
            if self.rng.chance(0.12) {
                self.log(session, Some(&turn));
            }
            let turn_fail = last && matches!(end, End::Failed { model: false, .. });
            if !last || turn_fail || open == Some(Open::Blocked) {
                let out_tokens = self.rng.range(15, 400);
                self.model_end(session, &turn, "tool_calls", out_tokens, started);
                let calls = if last {
                    1
                } else if self.persisted {
                    1 + self.rng.geometric(PERSISTED.more_calls, 4)
                } else {
                    1 + self.rng.geometric(0.3, 4)
                };
                for _ in 0..calls {
                    let blocked = last && open == Some(Open::Blocked);
                    if self.tool_call(session, &turn, depth, blocked) {
                        out.open = true;
                        return (turn, out);
                    }
                    if self.rng.chance(0.08) {
                        self.progress(session, Some(&turn));
                    }
                }
                if turn_fail {
                    failure = Some(self.turn_error());
                    if let Some(e) = &failure {
                        if matches!(
                            e.code,
                            Some("invalid_compaction_summary")
                                | Some("compaction_request_too_large")
                                | Some("compaction_replacement_too_large")
                        ) {
                            self.wait(10, 200);
                            self.out.ev(session, Some(&turn), "compaction/start", |d| {
                                d.push_str("{\"trigger\":\"auto\"}");
                            });
                            self.wait(500, 20_000);
                        }
                    }
                    break 'steps;
                }
                continue;
            }
            let finish = match end {
                End::Stop("max_tokens") | End::Stop("max-tokens") | End::Stop("incomplete") => {
                    "length"
                }
                End::Stop("refusal") => "content_filter",
                End::Stop("stop_sequence") => "stop_sequence",
                _ => "stop",
            };
            let out_tokens = (text.len() as u64 / 4).max(5) + self.rng.range(0, 60);
            self.model_end(session, &turn, finish, out_tokens, started);
            final_text = text;
        }
        // The turn's end.
        self.wait(5, 150);
        if let End::Interrupted {
            session_cancel: true,
            ..
        } = end
        {
            self.out.ev(session, None, "session/end", |d| {
                d.push_str("{\"status\":\"cancelled\"}")
            });
            self.wait(1, 30);
        }
        let malformed = is_root && self.malformed_ends && self.arng.chance(0.3);
        if malformed {
            let variant = self.arng.below(3);
            self.out.ev(session, Some(&turn), "turn/end", |d| {
                d.push_str(match variant {
                    0 => "{\"reason\":{\"cause\":\"user_cancel\"},\"text\":\"\"}",
                    1 => "{\"reason\":{\"kind\":3}}",
                    _ => "{\"reason\":\"completed\",\"text\":\"done\"}",
                });
            });
            return (turn, out);
        }
        let structured = self.rng.below(100);
        let mut hex = String::new();
        self.rng.hex(12, &mut hex);
        let files_changed = self.rng.range(0, 9);
        match (end, &failure) {
            (_, Some(e)) => {
                out.bad = true;
                let kind = match end {
                    End::Failed { kind, .. } => kind,
                    _ => "error",
                };
                self.out.ev(session, Some(&turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    d.push_str(",\"error\":");
                    e.write(&hex, d);
                    d.push_str("}}");
                });
            }
            (End::Completed(kind), None) => {
                self.out.ev(session, Some(&turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    d.push_str("},\"text\":");
                    json_str(d, &final_text);
                    if structured < 8 {
                        let _ = write!(
                            d,
                            ",\"output\":{{\"status\":\"done\",\"files_changed\":{files_changed},\"summary\":"
                        );
                        json_str(d, final_text.get(..40).unwrap_or(&final_text));
                        d.push('}');
                    } else if structured == 8 {
                        d.push_str(",\"output\":\"{\\\"status\\\": \\\"done\\\", \\\"files\",\"output_error\":\"EOF while parsing an object at line 1 column 28\"");
                    }
                    d.push('}');
                });
            }
            (End::Stop(kind), None) | (End::Unknown(kind), None) => {
                let unknown = matches!(end, End::Unknown(_));
                self.out.ev(session, Some(&turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    if unknown {
                        let _ = write!(d, ",\"ticket\":\"rv_{hex}\"");
                    }
                    d.push_str("},\"text\":");
                    json_str(d, &final_text);
                    d.push('}');
                });
            }
            (End::Interrupted { kind, cause, .. }, None) => {
                out.bad = true;
                self.out.ev(session, Some(&turn), "turn/end", |d| {
                    d.push_str("{\"reason\":{\"kind\":");
                    json_str(d, kind);
                    match cause {
                        Cause::Given(c) => {
                            d.push_str(",\"cause\":");
                            json_str(d, c);
                        }
                        Cause::Nested(c) => {
                            d.push_str(",\"reason\":{\"kind\":");
                            json_str(d, c);
                            d.push('}');
                        }
                        Cause::None => {}
                    }
                    d.push_str("}}");
                });
            }
            (End::Failed { .. }, None) => unreachable!("a failed turn always has its error"),
        }
        (turn, out)
    }

    /// One tool call with its result (and callbacks, subagents). With `block`, the call
    /// waits on a callback and the log ends there: returns true.
    fn tool_call(&mut self, session: &str, turn: &str, depth: u32, block: bool) -> bool {
        let (name, kind) = {
            let all: &[(&str, ToolKind, u32)] = TOOLS;
            let idx = self.rng.weighted(
                &all.iter()
                    .enumerate()
                    .map(|(i, t)| {
                        // Subagents delegate more; grandchildren do not.
                        let w = match (t.1, depth) {
                            (ToolKind::Delegate, 0) if self.persisted => PERSISTED.delegate * t.2,
                            (ToolKind::Delegate, 0) => t.2,
                            (ToolKind::Delegate, 1) => 3 * t.2,
                            (ToolKind::Delegate, _) => 0,
                            _ => t.2,
                        };
                        (i, w)
                    })
                    .collect::<Vec<_>>(),
            );
            (all[idx].0, all[idx].1)
        };
        let call_id = self.id("call_", 16);
        // Arguments; now and then the model's arguments are not valid JSON, or the tool is unknown.
        let invalid = if block { 100 } else { self.rng.below(100) };
        let (name, args): (&str, String) = if invalid < 2 {
            (
                name,
                format!("\"{{\\\"path\\\": \\\"{}\"", self.rng.pick(PATHS)),
            )
        } else if invalid < 3 {
            (
                self.rng.pick(&["search_web", "run_python", "read"]),
                "{\"q\":\"status\"}".into(),
            )
        } else {
            let a = match name {
                "fs.read_file" | "fs.write_file" => format!(
                    "{{\"path\":\"{}\",\"max_bytes\":{}}}",
                    self.rng.pick(PATHS),
                    self.rng.range(1, 64) * 1024
                ),
                "fs.list_dir" => "{\"path\":\".\",\"recursive\":false}".into(),
                "code.search" => format!(
                    "{{\"pattern\":\"{}\",\"glob\":\"**/*.rs\"}}",
                    self.rng
                        .pick(&["parse_config", "TODO", "fn main", "unwrap()", "retry"])
                ),
                "shell.exec" => format!(
                    "{{\"command\":\"{}\",\"timeout_s\":120}}",
                    self.rng.pick(COMMANDS)
                ),
                "web.search" | "web.fetch" => {
                    format!(
                        "{{\"query\":\"{}\",\"top_k\":{}}}",
                        self.rng.pick(QUERIES),
                        self.rng.range(3, 10)
                    )
                }
                "agent.delegate" => format!(
                    "{{\"agent\":\"{}\",\"task\":\"{}\"}}",
                    self.rng.pick(SUB_NAMES),
                    self.rng.pick(PROGRESS)
                ),
                "client.get_location" => "{\"precision\":\"city\"}".into(),
                "client.get_weather" => "{\"city\":\"Lisbon\",\"units\":\"metric\"}".into(),
                _ => format!(
                    "{{\"id\":{},\"dry_run\":{}}}",
                    self.rng.range(1, 9999),
                    self.rng.chance(0.5)
                ),
            };
            (name, a)
        };
        let invalid = invalid < 3;
        self.wait(5, 80);
        self.out.ev(session, Some(turn), "tool/call", |d| {
            d.push_str("{\"call_id\":");
            json_str(d, &call_id);
            d.push_str(",\"name\":");
            json_str(d, name);
            d.push_str(",\"arguments\":");
            d.push_str(&args);
            d.push('}');
        });
        let (mut status, mut detail): (&str, Option<&str>) = ("ok", None);
        if invalid {
            status = "invalid";
            detail = Some(if args.starts_with('"') {
                "arguments are not valid JSON"
            } else {
                "unknown tool"
            });
        } else {
            let cb_kind = match kind {
                ToolKind::Approval if block || self.rng.chance(0.6) => Some("approval"),
                ToolKind::Client => Some("client_tool_call"),
                ToolKind::SignIn if block || self.rng.chance(0.5) => Some("sign_in"),
                _ if block => Some("approval"),
                // Nested subagents run sandboxed: more of their calls need an approval.
                ToolKind::Plain if depth == 2 && self.rng.chance(0.4) => Some("approval"),
                _ if self.rng.chance(0.005) => Some("elicitation"),
                _ => None,
            };
            if let Some(ck) = cb_kind {
                let cb = self.id("cb_", 16);
                let title: Option<String> = match ck {
                    "approval" if self.rng.chance(0.85) => Some(match name {
                        "shell.exec" => "Run a shell command?".to_string(),
                        "fs.write_file" => "Allow writing to the workspace?".to_string(),
                        _ => format!("Allow {name}?"),
                    }),
                    "sign_in" => Some(format!(
                        "Sign in to {}",
                        if name.starts_with("calendar") {
                            "Google Calendar"
                        } else {
                            "GitHub"
                        }
                    )),
                    "elicitation" => Some("Which environment should I use?".to_string()),
                    _ => None,
                };
                self.wait(5, 60);
                self.out.ev(session, Some(turn), "callback/open", |d| {
                    d.push_str("{\"callback_id\":");
                    json_str(d, &cb);
                    d.push_str(",\"kind\":");
                    json_str(d, ck);
                    d.push_str(",\"title\":");
                    match &title {
                        Some(t) => json_str(d, t),
                        None => d.push_str("null"),
                    }
                    d.push_str(",\"request\":{\"tool\":");
                    json_str(d, name);
                    d.push_str(",\"call_id\":");
                    json_str(d, &call_id);
                    d.push_str("}}");
                });
                if block {
                    return true;
                }
                let answered = ck != "approval" || self.rng.chance(0.85);
                if answered {
                    // A person (or the client) takes a while.
                    self.wait(1500, 90_000);
                    if self.rng.chance(0.1) {
                        self.log(session, Some(turn));
                    }
                    self.out.ev(session, Some(turn), "callback/answer", |d| {
                        d.push_str("{\"callback_id\":");
                        json_str(d, &cb);
                        d.push('}');
                    });
                    if ck == "approval" && self.rng.chance(0.12) {
                        status = "denied";
                        detail = Some("the user denied the call");
                    }
                } else {
                    // Never answered: the call times out; the callback closes with the turn.
                    self.wait(300_000, 300_500);
                    status = "approval_timed_out";
                    detail = Some("no answer within 300s");
                }
            }
            if kind == ToolKind::Delegate && status == "ok" {
                let sub = self.subagent(session, turn, depth + 1);
                if sub != "closed" {
                    status = "error";
                    detail = Some(if sub == "cancelled" {
                        "the subagent was cancelled"
                    } else {
                        "the subagent failed"
                    });
                }
            } else if status == "ok" {
                self.wait(10, 3000);
                let (s, dt) = self.rng.weighted(&[
                    (("ok", None), 850),
                    (("error", Some("exit status 1")), 40),
                    (("error", Some("ENOENT: no such file or directory")), 25),
                    (("error", Some("timed out after 120s")), 10),
                    (
                        (
                            "rejected",
                            Some("policy: network access is disabled for this agent"),
                        ),
                        20,
                    ),
                    (
                        (
                            "hook_skipped",
                            Some("pre_tool hook skipped the call: read-only mode"),
                        ),
                        12,
                    ),
                    (("hook_failed", Some("pre_tool hook raised ValueError")), 10),
                    (
                        ("budget_exceeded", Some("tool budget of 50 calls exceeded")),
                        10,
                    ),
                ]);
                status = s;
                detail = dt;
            }
        }
        let bytes = self.rng.range(0, 20_000);
        self.wait(1, 40);
        self.out.ev(session, Some(turn), "tool/result", |d| {
            d.push_str("{\"call_id\":");
            json_str(d, &call_id);
            d.push_str(",\"status\":");
            json_str(d, status);
            if let Some(dt) = detail {
                d.push_str(",\"detail\":");
                json_str(d, dt);
            }
            let _ = write!(d, ",\"output_bytes\":{bytes}}}");
        });
        self.ctx += bytes / 4;
        false
    }

    /// A subagent spawned by (`parent`, `parent_turn`): its session, turns and end.
    /// Returns its `session/end` status.
    fn subagent(&mut self, parent: &str, parent_turn: &str, depth: u32) -> &'static str {
        self.next_sub += 1;
        let session = format!("{parent}/sub-{}", self.next_sub);
        let name = self.rng.pick(SUB_NAMES);
        self.wait(10, 300);
        self.session_start(&session, Some((parent, parent_turn)), name);
        let status = self
            .rng
            .weighted(&[("closed", 85), ("cancelled", 8), ("failed", 7)]);
        let turns = 1 + self.rng.geometric(0.2, 2);
        let saved_ctx = self.ctx;
        self.ctx = self.rng.range(800, 4000);
        for i in 0..turns {
            let last = i + 1 == turns;
            let end = if !last {
                End::Completed("completed")
            } else {
                match status {
                    "cancelled" => End::Interrupted {
                        kind: self.rng.pick(&["interrupted", "cancelled"]),
                        cause: Cause::None,
                        session_cancel: true,
                    },
                    "failed" => End::Failed {
                        kind: "error",
                        model: self.rng.chance(0.5),
                    },
                    _ => self.pick_end(false),
                }
            };
            self.turn(&session, depth, end, None);
        }
        if status != "cancelled" {
            self.session_end(&session, status);
        }
        self.ctx = saved_ctx + self.rng.range(100, 1500);
        status
    }

    // -- runner streams ----------------------------------------------------------------

    /// An agent recorded by a client following Runs: attempts of runs, each ending
    /// completed (or waiting), failed (and retried), cancelled, or dying mid-stream.
    fn runner_agent(&mut self) {
        let root = self.root();
        let runs = 1 + self.rng.geometric(0.75, 16);
        let mut waiting: Option<(String, String)> = None;
        for r in 0..runs {
            let last_run = r + 1 == runs;
            if r > 0 {
                self.wait(10_000, 3_600_000);
            }
            let run_id = self.id("run_", 16);
            let mut attempt = 1u32;
            loop {
                self.wait(10, 500);
                self.out.ev(&root, None, "run.started", |d| {
                    d.push_str("{\"run_id\":");
                    json_str(d, &run_id);
                    let _ = write!(d, ",\"attempt\":{attempt}}}");
                });
                let statuses: &[&str] = if self.rng.chance(0.5) {
                    &["queued", "running"]
                } else {
                    &["running"]
                };
                for st in statuses {
                    self.wait(10, 1500);
                    self.out.ev(&root, None, "run.status", |d| {
                        d.push_str("{\"run_id\":");
                        json_str(d, &run_id);
                        d.push_str(",\"status\":");
                        json_str(d, st);
                        d.push('}');
                    });
                }
                let settle = self.rng.weighted(&[
                    ("completed", 600),
                    ("waiting", 120),
                    ("failed", 100),
                    ("cancelled", 60),
                    ("dies", 100),
                    ("newer", 15),
                ]);
                let turn = match waiting.take() {
                    Some((t, cb)) => {
                        self.wait(10, 200);
                        self.out.ev(&root, Some(&t), "callback/answer", |d| {
                            d.push_str("{\"callback_id\":");
                            json_str(d, &cb);
                            d.push('}');
                        });
                        t
                    }
                    None => {
                        let t = self.new_turn();
                        self.wait(5, 100);
                        self.out.ev0(&root, Some(&t), "turn/start");
                        t
                    }
                };
                let started = self.out.ts;
                if self.rng.chance(0.3) {
                    self.progress(&root, Some(&turn));
                }
                if self.reasoning && self.rng.chance(0.6) {
                    let n = self.rng.range(1, 8) as u32;
                    self.deltas(&root, Some(&turn), "reasoning/delta", n, false);
                }
                if settle != "dies" && self.rng.chance(0.35) {
                    let n = self.rng.range(0, 2) as u32;
                    self.deltas(&root, Some(&turn), "text/delta", n, false);
                    let out_tokens = self.rng.range(20, 300);
                    self.model_end(&root, &turn, "tool_calls", out_tokens, started);
                    for _ in 0..1 + self.rng.geometric(0.3, 3) {
                        self.tool_call(&root, &turn, 3, false);
                    }
                }
                if self.rng.chance(0.1) {
                    self.log(&root, Some(&turn));
                }
                let n = self.rng.range(1, 20) as u32;
                let text = self.deltas(&root, Some(&turn), "text/delta", n, true);
                if settle == "dies" {
                    if self.rng.chance(0.3) {
                        self.deltas(&root, Some(&turn), "reasoning/delta", 1, false);
                    }
                    if last_run {
                        return; // the log ends on a delta: a provisional tail
                    }
                    // The client lost the stream and re-attached: the next attempt.
                    self.wait(2000, 30_000);
                    attempt += 1;
                    continue;
                }
                let mut hex = String::new();
                self.rng.hex(12, &mut hex);
                match settle {
                    "completed" | "newer" => {
                        let out_tokens = (text.len() as u64 / 4).max(5);
                        self.model_end(&root, &turn, "stop", out_tokens, started);
                        self.wait(5, 100);
                        self.out.ev(&root, Some(&turn), "turn/end", |d| {
                            d.push_str("{\"reason\":{\"kind\":\"COMPLETED\"},\"text\":");
                            json_str(d, &text);
                            d.push('}');
                        });
                        let payload = self.rng.chance(0.3);
                        self.wait(5, 100);
                        self.out.ev(&root, None, "run.completed", |d| {
                            d.push_str("{\"run_id\":");
                            json_str(d, &run_id);
                            let _ = write!(d, ",\"attempt\":{attempt},\"output\":{{\"status\":");
                            if settle == "newer" {
                                d.push_str("\"HANDED_OFF\"");
                            } else {
                                d.push_str("\"COMPLETED\",\"assistantText\":");
                                json_str(d, &text);
                                if payload {
                                    let _ = write!(d, ",\"finalizedPayload\":{{\"ticket\":\"T-{hex}\",\"priority\":\"normal\"}}");
                                }
                            }
                            d.push_str("}}");
                        });
                    }
                    "waiting" => {
                        let kind = self.rng.weighted(&[
                            ("approval", 4),
                            ("client_tool_call", 3),
                            ("sign_in", 1),
                            ("input", 2),
                        ]);
                        let out_tokens = self.rng.range(20, 200);
                        self.model_end(&root, &turn, "tool_calls", out_tokens, started);
                        let cb = self.id("cb_", 16);
                        self.wait(5, 60);
                        self.out.ev(&root, Some(&turn), "callback/open", |d| {
                            d.push_str("{\"callback_id\":");
                            json_str(d, &cb);
                            d.push_str(",\"kind\":");
                            json_str(d, kind);
                            d.push_str(",\"title\":null,\"request\":{}}");
                        });
                        self.wait(5, 100);
                        self.out.ev(&root, None, "run.completed", |d| {
                            d.push_str("{\"run_id\":");
                            json_str(d, &run_id);
                            let _ = write!(
                                d,
                                ",\"attempt\":{attempt},\"output\":{{\"status\":\"WAITING\",\"waitFor\":{{\"kind\":"
                            );
                            json_str(d, kind);
                            d.push_str(",\"callback_id\":");
                            json_str(d, &cb);
                            d.push_str("}}}");
                        });
                        waiting = Some((turn, cb));
                    }
                    "failed" => {
                        let e = if self.rng.chance(0.5) {
                            self.model_error()
                        } else {
                            ErrSpec {
                                code: Some(
                                    self.rng.pick(&["remote_session_failed", "turn_failed"]),
                                ),
                                message: "the served agent failed".into(),
                                retryable: self.rng.chance(0.3),
                                status: self.rng.pick(&[None, Some(500)]),
                                reason: None,
                                request_id: true,
                            }
                        };
                        self.wait(5, 500);
                        self.out.ev(&root, Some(&turn), "turn/end", |d| {
                            d.push_str("{\"reason\":{\"kind\":\"FAILED\",\"error\":");
                            e.write(&hex, d);
                            d.push_str("}}");
                        });
                        self.wait(5, 100);
                        self.out.ev(&root, None, "run.failed", |d| {
                            d.push_str("{\"run_id\":");
                            json_str(d, &run_id);
                            let _ = write!(d, ",\"attempt\":{attempt},\"error\":");
                            e.write(&hex, d);
                            d.push('}');
                        });
                        if e.retryable && attempt < 3 {
                            self.wait(1000, 10_000);
                            attempt += 1;
                            continue;
                        }
                    }
                    _ => {
                        self.wait(5, 500);
                        self.out.ev(&root, Some(&turn), "turn/end", |d| {
                            d.push_str(
                                "{\"reason\":{\"kind\":\"CANCELLED\",\"cause\":\"client\"}}",
                            );
                        });
                        self.wait(5, 100);
                        self.out.ev(&root, None, "run.cancelled", |d| {
                            d.push_str("{\"run_id\":");
                            json_str(d, &run_id);
                            let _ = write!(d, ",\"attempt\":{attempt},\"reason\":\"user\"}}");
                        });
                    }
                }
                break;
            }
            if last_run && waiting.is_some() {
                // The log ends while the run waits: its turn stays blocked.
                return;
            }
        }
    }

    // -- anomalies ----------------------------------------------------------------------

    /// Applies anomalies (with a rate > 0) and returns the agent's lines in written order.
    /// `second_first` tells whether ingest reads the agent's second file before its first
    /// (`None`: one file, read in written order).
    fn finish(mut self, split: bool, second_first: Option<bool>) -> Rendered {
        let n = self.out.lines.len();
        let mut order: Vec<usize> = (0..n).collect();
        if self.rate > 0.0 {
            self.anomalies(&mut order);
        }
        let mut items: Vec<Item> = order
            .iter()
            .map(|&i| {
                let l = self.out.lines[i];
                Item {
                    start: l.start,
                    end: l.end,
                    second: false,
                    seq: l.seq,
                    ts: l.ts,
                    content: l.content,
                }
            })
            .collect();
        if split && self.rate > 0.0 && items.len() > 4 && self.arng.chance(0.3 * self.rate) {
            // Split over two files: a tail (log rotation), and a few scattered lines.
            let from =
                self.arng
                    .range(items.len() as u64 / 3, items.len() as u64 - 1) as usize;
            for (i, it) in items.iter_mut().enumerate() {
                it.second = i >= from || self.arng.chance(0.05);
            }
        }
        // The order ingest sees: by file, then line (each file keeps the written order).
        let mut seen: Vec<usize> = (0..items.len()).collect();
        if let Some(sf) = second_first {
            seen.sort_by_key(|&k| items[k].second != sf);
        }
        let expected = self.expected(seen.iter().map(|&k| order[k]));
        Rendered {
            buf: self.out.buf,
            items,
            expected,
        }
    }

    /// Applies §1 and §7 to the lines (indices into `out.lines`) in ingest order: per seq the
    /// first valid line is kept, a later one with equal content is a duplicate, one with
    /// other content a reject; a bad line is a reject.
    fn expected(&self, lines: impl Iterator<Item = usize>) -> Expected {
        let mut e = Expected::default();
        let mut kept: Vec<Option<usize>> = vec![None; self.out.seq as usize + 1];
        for li in lines {
            let line = self.out.lines[li];
            let Some(content) = line.content else {
                e.rejects += 1;
                continue;
            };
            match &mut kept[line.seq as usize] {
                slot @ None => {
                    *slot = Some(content);
                    e.kept += 1;
                }
                Some(k) if *k == content => e.duplicates += 1,
                Some(_) => e.rejects += 1,
            }
        }
        e
    }

    /// Adds a line to the buffer (not to the generated events) and returns its index.
    fn extra_line(&mut self, text: &str, like: Line, content: Content) -> usize {
        let content = match content {
            Content::New => Some(self.out.lines.len()),
            Content::SameAs(i) => self.out.lines[i].content,
            Content::Bad => None,
        };
        let start = self.out.buf.len();
        self.out.buf.push_str(text);
        self.out.lines.push(Line {
            start,
            end: self.out.buf.len(),
            seq: like.seq,
            ts: like.ts,
            mid_turn: false,
            content,
        });
        self.out.lines.len() - 1
    }

    fn line_text(&self, i: usize) -> String {
        let l = self.out.lines[i];
        self.out.buf[l.start..l.end].to_string()
    }

    fn anomalies(&mut self, order: &mut Vec<usize>) {
        let rate = self.rate;
        let n = order.len();
        // Truncated: the log was cut inside a turn.
        if n > 10 && self.arng.chance(0.08 * rate) {
            let cands: Vec<usize> = (n / 2..n - 1)
                .filter(|&i| self.out.lines[i].mid_turn)
                .collect();
            if !cands.is_empty() {
                let cut = cands[self.arng.below(cands.len() as u64) as usize];
                order.truncate(cut + 1);
            }
        }
        // Lost lines: gaps in seq.
        if order.len() > 10 && self.arng.chance(0.06 * rate) {
            for _ in 0..self.arng.range(1, 3) {
                let i = self.arng.range(1, order.len() as u64 - 1) as usize;
                order.remove(i);
            }
        }
        // Conflicting re-deliveries: same root and seq, different content.
        // Only generated events get a variant, at most one each: two variants of one event
        // could be equal, and a variant of a variant could repeat a key.
        if order.len() > 2 && self.arng.chance(0.25 * rate) {
            let mut varied = usize::MAX;
            for _ in 0..self.arng.range(1, 2) {
                let pos = self.arng.below(order.len() as u64) as usize;
                let li = order[pos];
                if li >= n || li == varied {
                    continue;
                }
                varied = li;
                let line = self.out.lines[li];
                let text = self.line_text(li);
                let variant = self.conflicting(&text, line);
                let extra = self.extra_line(&variant, line, Content::New);
                // Usually after the original, sometimes before it (then the original conflicts).
                let at = if self.arng.chance(0.75) {
                    self.arng.range(pos as u64 + 1, order.len() as u64) as usize
                } else {
                    pos
                };
                order.insert(at, extra);
            }
        }
        // Exact duplicates (at-least-once delivery), some re-serialized with other spacing.
        if self.arng.chance(0.4 * rate) {
            let mut i = 0;
            while i < order.len() {
                if self.arng.chance(0.03) {
                    let li = order[i];
                    let line = self.out.lines[li];
                    let dup = if self.arng.chance(0.25) {
                        let t = self.line_text(li);
                        let spaced = format!("{{ {} }}", &t[1..t.len() - 1]);
                        self.extra_line(&spaced, line, Content::SameAs(li))
                    } else {
                        li
                    };
                    let at = (i + 1 + self.arng.below(20) as usize).min(order.len());
                    order.insert(at, dup);
                    i += 1;
                }
                i += 1;
            }
        }
        // Bad lines.
        if self.arng.chance(0.3 * rate) {
            for _ in 0..self.arng.range(1, 3) {
                let pos = self.arng.below(order.len() as u64 + 1) as usize;
                let near = self.arng.below(n as u64) as usize;
                let bad = self.bad_line(near);
                let extra = self.extra_line(&bad, self.out.lines[near], Content::Bad);
                order.insert(pos, extra);
            }
        }
        // Lines out of seq order.
        if order.len() > 3 && self.arng.chance(0.2 * rate) {
            for _ in 0..self.arng.range(1, 5) {
                let i = self.arng.below(order.len() as u64 - 1) as usize;
                order.swap(i, i + 1);
            }
        }
    }

    /// A different event with the same root and seq as `text`.
    fn conflicting(&mut self, text: &str, line: Line) -> String {
        let ts_at = text.find("\"ts\":\"").map(|i| i + 6);
        match (self.arng.below(2), ts_at) {
            (0, Some(at)) => {
                // Re-recorded with another clock.
                let mut s = String::with_capacity(text.len());
                s.push_str(&text[..at]);
                push_ts(&mut s, line.ts + self.arng.range(1, 5000) as i64);
                s.push_str(&text[at + 24..]);
                s
            }
            _ => {
                // Always a valid line with other data: `data` null or empty gets an object.
                if let Some(body) = text.strip_suffix("\"data\":null}") {
                    format!("{body}\"data\":{{\"redelivered\":true}}}}")
                } else if let Some(body) = text.strip_suffix("\"data\":{}}") {
                    format!("{body}\"data\":{{\"redelivered\":true}}}}")
                } else if let Some(body) = text.strip_suffix("}}") {
                    format!("{body},\"redelivered\":true}}}}")
                } else {
                    format!(
                        "{},\"data\":{{\"redelivered\":true}}}}",
                        &text[..text.len() - 1]
                    )
                }
            }
        }
    }

    /// A line that ingest must reject, made from the line `near`.
    fn bad_line(&mut self, near: usize) -> String {
        let line = self.out.lines[near];
        let text = self.line_text(near);
        let root = self.out.root.clone();
        let mut ts = String::new();
        push_ts(&mut ts, line.ts);
        match self.arng.below(8) {
            0 => {
                // A partial write: cut in the middle.
                let mut cut = text.len() / 2;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text[..cut].to_string()
            }
            1 => format!(
                "{{\"seq\":{},\"ts\":\"{ts}\",\"session\":\"{root}\",\"type\":\"log\",\"data\":{{\"level\":\"warn\",\"message\":\"missing root\"}}}}",
                line.seq
            ),
            2 => text.replacen("{\"seq\":", "{\"seq\":-", 1),
            3 => match text.find("\"ts\":\"") {
                Some(i) => {
                    let bad = self.arng.pick(&["2026-11-03 10:00:00", "yesterday", "2026-11-03T10:00:00"]);
                    format!("{}{}{}", &text[..i + 6], bad, &text[i + 6 + 24..])
                }
                None => text.replacen("{\"seq\":", "{\"seq\":\"x", 1),
            },
            4 => format!(
                "{{\"seq\":\"{}\",\"ts\":\"{ts}\",\"root\":\"{root}\",\"session\":\"{root}\",\"type\":\"progress\",\"data\":{{\"text\":\"seq as a string\"}}}}",
                line.seq
            ),
            5 => format!(
                "{{\"seq\":{},\"ts\":\"{ts}\",\"root\":\"{root}\",\"session\":\"{root}\",\"type\":\"progress\",\"data\":\"working\"}}",
                line.seq
            ),
            6 => format!("{ts} ERROR runtime: connection reset by peer (agent {root})"),
            _ => format!("[\"{root}\",{},\"log\"]", line.seq),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{assemble, parse_line, read_stream, IngestOptions, Ingested};
    use crate::reduce::{reduce_agent, rules, Derived};
    use crate::shard::fnv1a64;
    use std::collections::{BTreeMap, BTreeSet};

    fn bytes(opts: &GenOptions) -> Vec<u8> {
        let mut v = Vec::new();
        let st = write_to(opts, &mut v).unwrap();
        assert_eq!(st.bytes, v.len() as u64);
        v
    }

    fn ingest(b: &[u8]) -> Ingested {
        let fr = read_stream(0, "gen.jsonl", b, &IngestOptions::default()).unwrap();
        assemble(vec![fr])
    }

    fn derive(ing: &Ingested) -> Derived {
        let mut d = Derived::default();
        for a in &ing.agents {
            d.append(reduce_agent(&a.root, &a.events));
        }
        d
    }

    fn opts(agents: u64, seed: u64, anomalies: f64) -> GenOptions {
        GenOptions {
            agents,
            seed,
            files: 1,
            anomalies,
            ..Default::default()
        }
    }

    #[test]
    fn timestamps_format() {
        let mut s = String::new();
        push_ts(&mut s, BASE_MS);
        assert_eq!(s, "2026-11-01T00:00:00.000Z");
        s.clear();
        push_ts(&mut s, 1_793_700_000_123);
        assert_eq!(s, "2026-11-03T10:00:00.123Z");
        s.clear();
        push_ts(&mut s, 951_782_400_000 + 86_399_999); // 2000-02-29, leap day
        assert_eq!(s, "2000-02-29T23:59:59.999Z");
    }

    #[test]
    fn same_options_same_bytes() {
        let o = opts(60, 7, 0.0);
        let a = bytes(&o);
        assert_eq!(a, bytes(&o));
        // agent_lines gives the same lines in the same order.
        let mut joined = String::new();
        for i in 0..o.agents {
            for l in agent_lines(&o, i) {
                joined.push_str(&l);
                joined.push('\n');
            }
        }
        assert_eq!(joined.as_bytes(), &a[..]);
        let o2 = opts(60, 7, 0.5);
        assert_eq!(bytes(&o2), bytes(&o2));
    }

    #[test]
    fn seeds_differ_and_agents_are_independent() {
        let a = bytes(&opts(20, 1, 0.0));
        let b = bytes(&opts(20, 2, 0.0));
        assert_ne!(a, b);
        // The first agents do not depend on how many there are.
        let small = bytes(&opts(5, 1, 0.0));
        assert!(a.starts_with(&small));
        // Root ids are unique per (seed, index).
        assert!(agent_lines(&opts(1, 255, 0.0), 0)[0].contains("\"root\":\"ag-ff-000000\""));
    }

    #[test]
    fn clean_logs_are_all_valid() {
        let o = opts(200, 3, 0.0);
        let b = bytes(&o);
        let text = std::str::from_utf8(&b).unwrap();
        let mut lines = 0u64;
        for l in text.lines() {
            let ev = parse_line(l.as_bytes()).unwrap_or_else(|e| panic!("{e}: {l}"));
            let _: serde_json::Value = serde_json::from_str(&ev.data).unwrap();
            lines += 1;
        }
        let ing = ingest(&b);
        let t = ing.totals();
        assert!(ing.rejects.is_empty(), "{:?}", ing.rejects.first());
        assert_eq!(t.duplicates, 0);
        assert_eq!(t.kept, lines);
        assert_eq!(ing.agents.len(), 200);
        for a in &ing.agents {
            // Strictly increasing seq and ts, no gaps.
            for w in a.events.windows(2) {
                assert_eq!(w[1].seq, w[0].seq + 1, "{}", a.root);
                assert!(w[1].ts > w[0].ts, "{} seq {}", a.root, w[1].seq);
            }
        }
        let d = derive(&ing);
        let statuses: BTreeSet<&str> = d.intervals.iter().map(|i| i.status).collect();
        assert!(
            statuses.contains("settled") && statuses.contains("unsettled"),
            "{statuses:?}"
        );
        assert!(!statuses.contains("protocol_error"));
        assert!(d.turns.iter().all(|t| t.protocol_error.is_none()));
        // Several days for "finish reasons by day".
        let days: BTreeSet<i64> = d
            .intervals
            .iter()
            .map(|i| i.opened_at / 86_400_000_000)
            .collect();
        assert!(days.len() >= 4, "{days:?}");
    }

    #[test]
    fn coverage_of_kinds_codes_and_shapes() {
        let o = opts(300, 11, 0.0);
        let ing = ingest(&bytes(&o));
        let d = derive(&ing);
        let mut classes = BTreeSet::new();
        let mut kinds = BTreeSet::new();
        let mut types = BTreeSet::new();
        for a in &ing.agents {
            for e in &a.events {
                types.insert(e.kind.clone());
                if e.kind == "turn/end" {
                    let v: serde_json::Value = serde_json::from_str(&e.data).unwrap();
                    let k = v["reason"]["kind"].as_str().unwrap().to_string();
                    classes.insert(format!("{:?}", rules::end_class(&k)));
                    kinds.insert(k);
                }
            }
        }
        for c in [
            "Completed(false)",
            "Completed(true)",
            "Interrupted",
            "Failed",
            "Unknown",
        ] {
            assert!(classes.contains(c), "missing {c}: {classes:?}");
        }
        let known_kinds = [
            "completed",
            "end_turn",
            "COMPLETED",
            "task_complete",
            "max_tokens",
            "max-tokens",
            "skipped",
            "blocked",
            "stop_sequence",
            "refusal",
            "incomplete",
            "cancelled",
            "interrupted",
            "aborted",
            "CANCELLED",
            "replaced",
            "review_ended",
            "budget_limited",
            "error",
            "failed",
            "FAILED",
        ];
        let seen = known_kinds.iter().filter(|k| kinds.contains(**k)).count();
        assert!(seen >= 19, "only {seen} of the known kinds: {kinds:?}");
        let codes: BTreeSet<&str> = d.errors.iter().filter_map(|e| e.code.as_deref()).collect();
        let known = rules::KNOWN_CODES
            .iter()
            .filter(|c| codes.contains(*c))
            .count();
        assert!(known >= 15, "only {known} known codes: {codes:?}");
        assert!(d.errors.iter().any(|e| e.retryable_mismatch == Some(true)));
        assert!(d
            .errors
            .iter()
            .any(|e| e.retried == Some(true) && e.recovered == Some(true)));
        assert!(d.errors.iter().any(|e| e.status_consistent == Some(false)));
        assert!(d
            .errors
            .iter()
            .any(|e| e.details_reason.as_deref() == Some("time_limit")));
        assert!(d
            .errors
            .iter()
            .any(|e| e.details_reason.as_deref() == Some("after_compaction")));
        let states: BTreeMap<&str, usize> = d.turns.iter().fold(BTreeMap::new(), |mut m, t| {
            *m.entry(t.state.unwrap_or("NULL")).or_default() += 1;
            m
        });
        for s in [
            "Running",
            "Blocked",
            "Completed",
            "Interrupted",
            "Failed",
            "UnknownOutcome",
        ] {
            assert!(states.contains_key(s), "missing state {s}: {states:?}");
        }
        let causes: BTreeSet<&str> = d.turns.iter().filter_map(|t| t.cause.as_deref()).collect();
        assert!(
            causes.contains("cancelled") && causes.contains("interrupted") && causes.len() > 4,
            "{causes:?}"
        );
        let statuses: BTreeSet<&str> = d
            .tool_calls
            .iter()
            .filter_map(|t| t.status.as_deref())
            .collect();
        for s in [
            "ok",
            "error",
            "denied",
            "rejected",
            "approval_timed_out",
            "hook_skipped",
            "hook_failed",
            "invalid",
            "budget_exceeded",
        ] {
            assert!(
                statuses.contains(s),
                "missing tool status {s}: {statuses:?}"
            );
        }
        assert!(d.tool_calls.iter().any(|t| t.status.is_none()));
        let closed: BTreeSet<Option<&str>> = d.callbacks.iter().map(|c| c.closed_by).collect();
        assert_eq!(closed.len(), 3, "{closed:?}");
        let cb_kinds: BTreeSet<&str> = d
            .callbacks
            .iter()
            .filter_map(|c| c.kind.as_deref())
            .collect();
        assert!(cb_kinds.len() >= 4, "{cb_kinds:?}");
        // Callbacks opened by subagents and by grandchildren.
        // Session ids of subagents derive from their parent's: `<root>/sub-1/sub-2`.
        let depth = |s: &str| s.matches("/sub-").count();
        assert!(
            d.turns.iter().any(|t| depth(&t.session) == 2),
            "no grandchild turns"
        );
        assert!(d.callbacks.iter().any(|c| depth(&c.session) == 1));
        assert!(d.callbacks.iter().any(|c| depth(&c.session) == 2));
        let settles: BTreeSet<&str> = d.runs.iter().map(|r| r.settle).collect();
        assert_eq!(settles.len(), 4, "{settles:?}");
        let outs: BTreeSet<&str> = d
            .runs
            .iter()
            .filter_map(|r| r.output_status.as_deref())
            .collect();
        assert!(
            outs.contains("COMPLETED") && outs.contains("WAITING"),
            "{outs:?}"
        );
        assert!(d.runs.iter().any(|r| r.provisional_tail));
        assert!(d.runs.iter().any(|r| r.wait_for_kind.is_some()));
        assert!(d.intervals.iter().any(|i| i.joined_messages > 0));
        assert!(d.intervals.iter().any(|i| i.busy > 0));
        assert!(d.intervals.iter().any(|i| i.conflicts > 0));
        assert!(d.agents.iter().any(|a| a.stray_idles > 0));
        for t in [
            "compaction/start",
            "session/end",
            "progress",
            "log",
            "reasoning/delta",
            "hook/run",
        ] {
            assert!(types.contains(t), "missing type {t}");
        }
        let lines: usize = ing.agents.iter().map(|a| a.events.len()).sum();
        let avg = lines as f64 / ing.agents.len() as f64;
        assert!(
            (120.0..=300.0).contains(&avg),
            "average {avg} lines per agent"
        );
    }

    #[test]
    fn anomalies_make_rejects_duplicates_and_protocol_errors() {
        let o = opts(200, 5, 0.5);
        let b = bytes(&o);
        let ing = ingest(&b);
        let t = ing.totals();
        assert_eq!(t.lines, t.kept + t.duplicates + t.rejects);
        assert!(t.rejects > 0 && t.duplicates > 0, "{t:?}");
        assert!(ing.rejects.iter().any(|r| r.reason.contains("conflicts")));
        assert!(ing
            .rejects
            .iter()
            .any(|r| r.reason.contains("not valid JSON")));
        let d = derive(&ing);
        assert!(d.intervals.iter().any(|i| i.status == "protocol_error"));
        assert!(d.turns.iter().any(|t| t.protocol_error.is_some()));
        assert!(d.agents.iter().any(|a| a.seq_gaps > 0));
        // Anomalies are layered on the same base log.
        let clean = agent_lines(&opts(1, 5, 0.0), 0);
        let noisy = agent_lines(&o, 0);
        assert!(clean.iter().take(3).all(|l| noisy.contains(l)));
    }

    #[test]
    fn files_and_compression() {
        let dir = tempfile::tempdir().unwrap();
        let o = GenOptions {
            agents: 40,
            seed: 9,
            files: 3,
            anomalies: 0.0,
            ..Default::default()
        };
        let st = write(&o, &dir.path().join("many")).unwrap();
        assert_eq!(st.files, 3);
        let plain = bytes(&opts(40, 9, 0.0));
        let want = ingest(&plain);
        let got =
            crate::ingest::ingest_paths(&[dir.path().join("many")], &IngestOptions::default())
                .unwrap();
        assert_eq!(got.totals().kept, want.totals().kept);
        assert_eq!(got.totals().bytes, st.bytes);
        for ext in ["gz", "zst", "jsonl"] {
            let p = dir.path().join(format!("one.{ext}"));
            let st = write(&opts(40, 9, 0.0), &p).unwrap();
            assert_eq!(st.bytes, plain.len() as u64);
            let got = crate::ingest::ingest_paths(&[p], &IngestOptions::default()).unwrap();
            assert_eq!(got.totals().kept, want.totals().kept);
            assert!(got.rejects.is_empty());
        }
        // Split agents and out-of-order lines over files still ingest to the same events.
        let noisy = GenOptions {
            agents: 60,
            seed: 4,
            files: 4,
            anomalies: 1.0,
            ..Default::default()
        };
        write(&noisy, &dir.path().join("noisy")).unwrap();
        let got =
            crate::ingest::ingest_paths(&[dir.path().join("noisy")], &IngestOptions::default())
                .unwrap();
        let t = got.totals();
        assert_eq!(t.lines, t.kept + t.duplicates + t.rejects);
        assert!(t.rejects > 0);
        assert!(write(
            &GenOptions {
                files: 0,
                ..Default::default()
            },
            &dir.path().join("x")
        )
        .is_err());
    }

    /// Issue #4: ingest reports exactly the accounting gen predicts, for a stream and for
    /// folders (agents split over two files, the second sorting first when it wraps to 0).
    #[test]
    fn ingest_matches_expected_accounting() {
        let dir = tempfile::tempdir().unwrap();
        let check = |what: &str, st: &GenStats, ing: &Ingested| {
            let t = ing.totals();
            let got = (t.lines, t.kept, t.duplicates, t.rejects);
            let want = (
                st.lines,
                st.expected_kept,
                st.expected_duplicates,
                st.expected_rejects,
            );
            assert_eq!(got, want, "{what}: (lines, kept, duplicates, rejects)");
            assert_eq!(
                st.lines,
                st.expected_kept + st.expected_duplicates + st.expected_rejects
            );
            assert_eq!(t.rejects as usize, ing.rejects.len(), "{what}");
        };
        let (mut dups, mut rejects, mut conflicts) = (0, 0, 0);
        for seed in [1, 2, 3, 7, 42] {
            for rate in [0.0, 0.05, 0.3, 1.0] {
                let o = opts(50, seed, rate);
                let mut v = Vec::new();
                let st = write_to(&o, &mut v).unwrap();
                let ing = ingest(&v);
                check(&format!("stream seed {seed} rate {rate}"), &st, &ing);
                if rate == 0.0 {
                    assert_eq!((st.expected_duplicates, st.expected_rejects), (0, 0));
                }
                dups += st.expected_duplicates;
                rejects += st.expected_rejects;
                for files in [1, 3, 4] {
                    let o = GenOptions { files, ..o.clone() };
                    let out = dir.path().join(format!("s{seed}-r{rate}-f{files}"));
                    std::fs::create_dir_all(&out).unwrap();
                    let st = write(&o, &out).unwrap();
                    let ing =
                        crate::ingest::ingest_paths(&[out], &IngestOptions::default()).unwrap();
                    check(
                        &format!("{files} files, seed {seed} rate {rate}"),
                        &st,
                        &ing,
                    );
                    if rate == 0.0 {
                        assert_eq!((st.expected_duplicates, st.expected_rejects), (0, 0));
                    }
                    conflicts += ing
                        .rejects
                        .iter()
                        .filter(|r| r.reason.contains("conflicts"))
                        .count();
                }
            }
        }
        assert!(dups > 0 && rejects > 0 && conflicts > 0);
        // Agents whose outcome depends on the second file sorting first (file 0 after the
        // last): predicting in written order gets these wrong.
        for (seed, files) in [(13, 3), (31, 3), (31, 4)] {
            let o = GenOptions {
                agents: 200,
                seed,
                files,
                anomalies: 1.0,
                ..Default::default()
            };
            let out = dir.path().join(format!("wrap-s{seed}-f{files}"));
            let st = write(&o, &out).unwrap();
            let ing = crate::ingest::ingest_paths(&[out], &IngestOptions::default()).unwrap();
            check(&format!("wrap: {files} files, seed {seed}"), &st, &ing);
        }
    }

    fn spread(
        agents: u64,
        seed: u64,
        files: u32,
        anomalies: f64,
        layout: Layout,
        mix: Mix,
    ) -> GenOptions {
        GenOptions {
            agents,
            seed,
            files,
            anomalies,
            layout,
            mix,
        }
    }

    /// The files of a folder written by `write`, in name order.
    fn folder(o: &GenOptions, dir: &Path) -> (GenStats, Vec<Vec<u8>>) {
        std::fs::create_dir_all(dir).unwrap();
        let st = write(o, dir).unwrap();
        let files = (0..o.files as usize)
            .map(|i| std::fs::read(dir.join(part_name(i))).unwrap())
            .collect::<Vec<_>>();
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            o.files as usize,
            "no scratch files left"
        );
        assert_eq!(st.bytes, files.iter().map(|f| f.len() as u64).sum::<u64>());
        (st, files)
    }

    /// The default layout and mix write what `runlog gen` wrote before they existed: FNV-1a
    /// of the bytes from the generator at 2b05103 (a stream, a stream with anomalies, and
    /// folders with and without anomalies).
    #[test]
    fn by_agent_deltas_bytes_are_pinned() {
        let mut v = Vec::new();
        write_to(&opts(60, 7, 0.0), &mut v).unwrap();
        assert_eq!(fnv1a64(&v), 0x8ad86a14b8b277dd);
        v.clear();
        write_to(&opts(60, 7, 0.5), &mut v).unwrap();
        assert_eq!(fnv1a64(&v), 0x3b69f651673f320e);
        let dir = tempfile::tempdir().unwrap();
        let cases: [(u64, u64, u32, f64, &[u64]); 2] = [
            (
                80,
                4,
                4,
                1.0,
                &[
                    0x561b43931f961cab,
                    0x70ba9fa88886a4dc,
                    0x3a5a7b6c04ff0247,
                    0xe3a91cde91624748,
                ],
            ),
            (
                50,
                2,
                3,
                0.0,
                &[0x291d0ccb8818251d, 0x51d23ef7d12936f9, 0xd0c4ebf5e25677f5],
            ),
        ];
        for (agents, seed, files, rate, want) in cases {
            let o = GenOptions {
                agents,
                seed,
                files,
                anomalies: rate,
                ..Default::default()
            };
            assert_eq!((o.layout, o.mix), (Layout::ByAgent, Mix::Deltas));
            let (_, got) = folder(&o, &dir.path().join(format!("{agents}-{seed}")));
            let got: Vec<u64> = got.iter().map(|f| fnv1a64(f)).collect();
            assert_eq!(got, want, "{agents} agents, seed {seed}, {files} files");
        }
    }

    #[test]
    fn layouts_and_mixes_parse_and_print() {
        for l in Layout::ALL {
            assert_eq!(l.to_string().parse::<Layout>(), Ok(l));
        }
        for m in Mix::ALL {
            assert_eq!(m.to_string().parse::<Mix>(), Ok(m));
        }
        assert_eq!("rotated".parse::<Layout>(), Ok(Layout::Rotated));
        assert_eq!("persisted".parse::<Mix>(), Ok(Mix::Persisted));
        assert!("by_agent".parse::<Layout>().is_err());
        assert!("delta".parse::<Mix>().is_err());
        let o = spread(3, 1, 1, 0.0, Layout::Rotated, Mix::Deltas);
        assert!(
            write_to(&o, &mut Vec::new()).is_err(),
            "a stream is by agent"
        );
    }

    #[test]
    fn every_layout_and_mix_same_arguments_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        for layout in Layout::ALL {
            for mix in Mix::ALL {
                for files in [1, 4] {
                    let o = spread(150, 3, files, 0.2, layout, mix);
                    let name = format!("{layout}-{mix}-{files}");
                    let (sa, a) = folder(&o, &dir.path().join(format!("{name}-a")));
                    let (sb, b) = folder(&o, &dir.path().join(format!("{name}-b")));
                    assert_eq!(a, b, "{name}");
                    assert_eq!(sa, sb, "{name}");
                    assert!(a.iter().all(|f| !f.is_empty()), "{name}: an empty file");
                }
            }
        }
    }

    fn line_multiset(files: &[Vec<u8>]) -> BTreeMap<Vec<u8>, usize> {
        let mut m = BTreeMap::new();
        for f in files {
            for l in f.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                *m.entry(l.to_vec()).or_insert(0) += 1;
            }
        }
        m
    }

    #[test]
    fn every_layout_holds_the_same_lines() {
        let dir = tempfile::tempdir().unwrap();
        for mix in Mix::ALL {
            for rate in [0.0, 0.3] {
                let mut want: Option<(BTreeMap<Vec<u8>, usize>, GenStats)> = None;
                for layout in Layout::ALL {
                    let o = spread(120, 8, 4, rate, layout, mix);
                    let (st, files) =
                        folder(&o, &dir.path().join(format!("{layout}-{mix}-{rate}")));
                    let lines = line_multiset(&files);
                    match &want {
                        None => want = Some((lines, st)),
                        Some((w, wst)) => {
                            assert!(*w == lines, "{layout} {mix} {rate}: other lines");
                            assert_eq!((st.lines, st.bytes), (wst.lines, wst.bytes));
                        }
                    }
                }
            }
        }
    }

    /// `"ts":"..."` of a generated line (fixed-width, so text order is time order).
    fn ts_of(line: &[u8]) -> &[u8] {
        let at = memchr::memmem::find(line, b"\"ts\":\"").unwrap() + 6;
        &line[at..at + 24]
    }

    fn root_of(line: &[u8]) -> &[u8] {
        let at = memchr::memmem::find(line, b"\"root\":\"").unwrap() + 8;
        let end = at + memchr::memchr(b'"', &line[at..]).unwrap();
        &line[at..end]
    }

    #[test]
    fn rotated_files_are_consecutive_time_windows() {
        let dir = tempfile::tempdir().unwrap();
        for mix in Mix::ALL {
            let o = spread(400, 5, 5, 0.0, Layout::Rotated, mix);
            let (_, files) = folder(&o, &dir.path().join(mix.name()));
            let mut prev_max: Option<Vec<u8>> = None;
            for (k, f) in files.iter().enumerate() {
                let lines: Vec<&[u8]> =
                    f.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
                let ts: Vec<&[u8]> = lines.iter().map(|l| ts_of(l)).collect();
                assert!(
                    ts.windows(2).all(|w| w[0] <= w[1]),
                    "file {k} not in time order"
                );
                if let Some(p) = &prev_max {
                    assert!(
                        p.as_slice() <= ts[0],
                        "file {k} starts before file {} ends",
                        k - 1
                    );
                }
                prev_max = Some(ts[ts.len() - 1].to_vec());
                // Many agents per file, interleaved: an agent's lines in a file are cut by other
                // agents' lines into several blocks (as many as the agents overlap in time).
                let roots: BTreeSet<&[u8]> = lines.iter().map(|l| root_of(l)).collect();
                assert!(roots.len() >= 40, "file {k}: {} agents", roots.len());
                let changes = lines
                    .windows(2)
                    .filter(|w| root_of(w[0]) != root_of(w[1]))
                    .count();
                assert!(
                    changes >= 2 * roots.len(),
                    "file {k}: agents not interleaved"
                );
            }
        }
    }

    #[test]
    fn scattered_spreads_each_agent_over_files_out_of_seq_order() {
        let dir = tempfile::tempdir().unwrap();
        for mix in Mix::ALL {
            let o = spread(300, 6, 4, 0.0, Layout::Scattered, mix);
            let (_, files) = folder(&o, &dir.path().join(mix.name()));
            // Per root: (file, seq) of each line in the order ingest reads them.
            let mut by_root: BTreeMap<Vec<u8>, Vec<(usize, u64)>> = BTreeMap::new();
            for (k, f) in files.iter().enumerate() {
                for l in f.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    let v: serde_json::Value = serde_json::from_slice(l).unwrap();
                    let seq = v["seq"].as_u64().unwrap();
                    by_root
                        .entry(root_of(l).to_vec())
                        .or_default()
                        .push((k, seq));
                }
            }
            assert_eq!(by_root.len(), 300);
            let mut spread_out = 0;
            let mut big = 0;
            for lines in by_root.values().filter(|l| l.len() >= 12) {
                big += 1;
                let in_files: BTreeSet<usize> = lines.iter().map(|l| l.0).collect();
                let in_order = lines.windows(2).all(|w| w[0].1 < w[1].1);
                if in_files.len() >= 2 && !in_order {
                    spread_out += 1;
                }
            }
            assert!(big >= 100, "{mix}: {big} agents of 12 lines or more");
            assert_eq!(
                spread_out, big,
                "{mix}: every agent over ≥ 2 files out of seq order"
            );
        }
    }

    #[test]
    fn persisted_mix_shares_are_near_the_target() {
        let o = spread(2000, 1, 1, 0.0, Layout::ByAgent, Mix::Persisted);
        let b = bytes(&o);
        let ing = ingest(&b);
        assert!(ing.rejects.is_empty());
        let mut n: BTreeMap<&str, u64> = BTreeMap::new();
        let mut total = 0u64;
        let mut bare = [0u64; 2];
        for a in &ing.agents {
            for e in &a.events {
                total += 1;
                let k: &str = &e.kind;
                let class = match k {
                    "text/delta" | "reasoning/delta" | "model/end" | "progress" => k,
                    "tool/call" | "tool/result" => "tool",
                    "turn/start" | "turn/end" => "turn",
                    "inbox/receipt" | "agent/idle" => "receipt+idle",
                    _ if k.starts_with("session/") => "session",
                    _ if k.starts_with("callback/") => "callback",
                    _ => "other",
                };
                *n.entry(class).or_default() += 1;
                if k == "turn/start" || k == "agent/idle" {
                    bare[0] += 1;
                    bare[1] += (e.data == "{}") as u64;
                }
            }
        }
        let pct = |c: &str| 100.0 * *n.get(c).unwrap_or(&0) as f64 / total as f64;
        let target = [
            ("text/delta", 17.0),
            ("reasoning/delta", 5.0),
            ("model/end", 16.0),
            ("tool", 19.0),
            ("turn", 17.0),
            ("receipt+idle", 12.0),
            ("session", 6.0),
            ("progress", 3.0),
            ("callback", 3.0),
        ];
        for (c, want) in target {
            let got = pct(c);
            let tol = (want * 0.25_f64).max(1.5);
            assert!(
                (got - want).abs() <= tol,
                "{c}: {got:.1}% against {want}% ({n:?})"
            );
        }
        assert!(pct("other") <= 6.0, "{n:?}");
        let per_agent = total as f64 / ing.agents.len() as f64;
        assert!(
            (38.0..=50.0).contains(&per_agent),
            "{per_agent} events per agent"
        );
        // ~25,000 agents per 200 MB.
        let bytes_per_agent = b.len() as f64 / ing.agents.len() as f64;
        assert!(
            (6500.0..=10_500.0).contains(&bytes_per_agent),
            "{bytes_per_agent} bytes per agent"
        );
        assert!(
            bare[1] * 10 >= bare[0] * 9,
            "turn/start and agent/idle without data"
        );
        // Subagent sessions.
        let depth1 = ing
            .agents
            .iter()
            .flat_map(|a| &a.events)
            .filter(|e| &*e.kind == "session/start" && e.session.contains("/sub-"))
            .count();
        assert!(
            depth1 as f64 >= 0.3 * ing.agents.len() as f64,
            "{depth1} subagents"
        );
        // The reducer sees a clean log.
        let d = derive(&ing);
        assert!(d.intervals.iter().all(|i| i.status != "protocol_error"));
    }

    /// Every row of the tables, as text, sorted: the same whatever the files and lines.
    fn tables(ing: &Ingested) -> Vec<String> {
        let mut rows: Vec<String> = Vec::new();
        for a in &ing.agents {
            for e in &a.events {
                rows.push(format!(
                    "event {} {} {} {} {:?} {} {}",
                    e.root, e.seq, e.ts, e.session, e.turn, e.kind, e.data
                ));
            }
        }
        let d = crate::reduce::reduce_all(ing);
        rows.extend(d.intervals.iter().map(|r| format!("interval {r:?}")));
        rows.extend(d.turns.iter().map(|r| format!("turn {r:?}")));
        rows.extend(d.errors.iter().map(|r| format!("error {r:?}")));
        rows.extend(d.tool_calls.iter().map(|r| format!("tool {r:?}")));
        rows.extend(d.callbacks.iter().map(|r| format!("callback {r:?}")));
        rows.extend(d.runs.iter().map(|r| format!("run {r:?}")));
        rows.extend(d.agents.iter().map(|r| format!("agent {r:?}")));
        rows.sort();
        rows
    }

    #[test]
    fn every_layout_ingests_to_the_same_tables() {
        let dir = tempfile::tempdir().unwrap();
        for mix in Mix::ALL {
            let mut want: Option<Vec<String>> = None;
            for layout in Layout::ALL {
                let o = spread(250, 12, 6, 0.0, layout, mix);
                let out = dir.path().join(format!("{layout}-{mix}"));
                let st = write(&o, &out).unwrap();
                let ing = crate::ingest::ingest_paths(&[out], &IngestOptions::default()).unwrap();
                assert!(ing.rejects.is_empty(), "{layout} {mix}");
                assert_eq!(ing.totals().kept, st.lines);
                let t = tables(&ing);
                assert!(t.len() as u64 > st.lines, "{layout} {mix}: derived rows");
                match &want {
                    None => want = Some(t),
                    Some(w) => assert!(*w == t, "{layout} {mix}: other tables"),
                }
            }
        }
    }

    /// With anomalies, the accounting gen predicts for the other layouts (read in their
    /// order: the kept line of a seq is the first ingest reads) is what ingest reports.
    #[test]
    fn every_layout_matches_expected_accounting() {
        let dir = tempfile::tempdir().unwrap();
        for layout in [Layout::Rotated, Layout::Scattered] {
            for mix in Mix::ALL {
                for (seed, rate) in [(1, 0.3), (2, 1.0)] {
                    for files in [1, 3] {
                        let o = spread(120, seed, files, rate, layout, mix);
                        let out = dir.path().join(format!("{layout}-{mix}-{seed}-{files}"));
                        let st = write(&o, &out).unwrap();
                        let ing =
                            crate::ingest::ingest_paths(&[out], &IngestOptions::default()).unwrap();
                        let t = ing.totals();
                        assert_eq!(
                            (t.lines, t.kept, t.duplicates, t.rejects),
                            (
                                st.lines,
                                st.expected_kept,
                                st.expected_duplicates,
                                st.expected_rejects
                            ),
                            "{layout} {mix} seed {seed} {files} files"
                        );
                        assert!(st.expected_rejects > 0 && st.expected_duplicates > 0);
                    }
                }
            }
        }
    }
}
