//! Writing the log: one stream, or a folder of files in one of three layouts (by agent,
//! rotated time windows, scattered runs), from agents generated in parallel batches.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use rayon::prelude::*;
use runlog_core::error::{Error, Result};

use crate::generator::{expected_in, render, Rendered};
use crate::options::{GenOptions, GenStats, Layout};
use crate::rng::Rng;
use crate::text::{BASE_MS, SPREAD_DAYS};

/// The name of file `i` of a folder.
pub fn part_name(i: usize) -> String {
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

pub(crate) fn stream_to(opts: &GenOptions, w: &mut dyn Write, name: &Path) -> Result<GenStats> {
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

pub(crate) fn write_folder(opts: &GenOptions, dir: &Path) -> Result<GenStats> {
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
pub(crate) fn spread_paths(opts: &GenOptions, out: &Path) -> Result<Vec<PathBuf>> {
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
pub(crate) fn write_spread(opts: &GenOptions, out: &Path) -> Result<GenStats> {
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

pub(crate) fn writers(paths: &[PathBuf]) -> Result<Vec<BufWriter<File>>> {
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
pub(crate) fn write_rotated(
    opts: &GenOptions,
    paths: &[PathBuf],
    stats: &mut GenStats,
) -> Result<()> {
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
pub(crate) fn write_scattered(
    opts: &GenOptions,
    paths: &[PathBuf],
    stats: &mut GenStats,
) -> Result<()> {
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
pub(crate) const BATCH: u64 = 128;

/// Generates every agent (in parallel batches, on a producer thread) and hands them to
/// `consume` in index order on the calling thread.
pub(crate) fn generate<F>(opts: &GenOptions, split: bool, mut consume: F) -> Result<()>
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
