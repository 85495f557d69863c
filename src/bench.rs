//! Bench: times each stage of the pipeline on the user's own logs (or a generated one), so
//! users can see where time goes: read+decode, reduce, build batches, write Parquet, and
//! how the process's peak memory grows stage by stage.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::error::Result;
use runlog_core::ingest::{self, IngestOptions};

/// The timing of one stage.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub stage: &'static str,
    pub seconds: f64,
    /// Bytes processed per second (input bytes, or Parquet bytes written), in MB/s.
    pub mb_per_s: Option<f64>,
    pub events_per_s: Option<f64>,
    /// The process's peak resident memory so far, at the end of the stage, in bytes
    /// (Linux `VmHWM`; absent elsewhere).
    pub peak_rss: Option<u64>,
}

/// The process's peak resident set size so far (`VmHWM` of `/proc/self/status`).
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The result of one bench run.
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    pub input_bytes: u64,
    pub events: u64,
    pub agents: u64,
    pub threads: usize,
    pub stages: Vec<Stage>,
}

fn dir_size(p: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let path = e.path();
            if path.is_dir() {
                total += dir_size(&path);
            } else if let Ok(m) = e.metadata() {
                total += m.len();
            }
        }
    }
    total
}

/// Runs every stage once over `paths`, writing the warehouse into `scratch`.
pub fn run(paths: &[PathBuf], scratch: &Path) -> Result<BenchResult> {
    let opts = IngestOptions::default();
    let all = Instant::now();

    let t = Instant::now();
    let ing = ingest::ingest_paths(paths, &opts)?;
    let read_s = t.elapsed().as_secs_f64();
    let read_rss = peak_rss();
    let totals = ing.totals();
    let events: u64 = ing.agents.iter().map(|a| a.events.len() as u64).sum();

    let t = Instant::now();
    let derived = runlog_core::reduce_all(&ing);
    let reduce_s = t.elapsed().as_secs_f64();
    let reduce_rss = peak_rss();

    // Batches are built while they are written (the `events` table batch by batch).
    let t = Instant::now();
    let wh = scratch.join("bench-warehouse");
    crate::pipeline::write_reduced(&wh, &ing, &derived, serde_json::Value::Null)?;
    let write_s = t.elapsed().as_secs_f64();
    let write_rss = peak_rss();
    let written = dir_size(&wh);
    let total_s = all.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&wh);

    let mb = |bytes: u64, s: f64| Some(bytes as f64 / 1e6 / s.max(1e-9));
    let eps = |s: f64| Some(events as f64 / s.max(1e-9));
    Ok(BenchResult {
        input_bytes: totals.bytes,
        events,
        agents: ing.agents.len() as u64,
        threads: rayon::current_num_threads(),
        stages: vec![
            Stage {
                stage: "read+decode",
                seconds: read_s,
                mb_per_s: mb(totals.bytes, read_s),
                events_per_s: eps(read_s),
                peak_rss: read_rss,
            },
            Stage {
                stage: "reduce",
                seconds: reduce_s,
                mb_per_s: None,
                events_per_s: eps(reduce_s),
                peak_rss: reduce_rss,
            },
            Stage {
                stage: "batches + parquet",
                seconds: write_s,
                mb_per_s: mb(written, write_s),
                events_per_s: eps(write_s),
                peak_rss: write_rss,
            },
            Stage {
                stage: "end to end",
                seconds: total_s,
                mb_per_s: mb(totals.bytes, total_s),
                events_per_s: eps(total_s),
                peak_rss: write_rss,
            },
        ],
    })
}

/// Renders a bench result as an aligned table.
pub fn render(r: &BenchResult) -> String {
    let mut out = format!(
        "input {:.1} MB, {} events, {} agents, {} threads\n\n  {:<17} {:>9} {:>10} {:>14} {:>13}\n",
        r.input_bytes as f64 / 1e6,
        r.events,
        r.agents,
        r.threads,
        "stage",
        "seconds",
        "MB/s",
        "events/s",
        "peak RSS MB"
    );
    for s in &r.stages {
        out.push_str(&format!(
            "  {:<17} {:>9.3} {:>10} {:>14} {:>13}\n",
            s.stage,
            s.seconds,
            s.mb_per_s.map_or("-".into(), |v| format!("{v:.1}")),
            s.events_per_s.map_or("-".into(), |v| format!("{v:.0}")),
            s.peak_rss
                .map_or("-".into(), |v| format!("{:.0}", v as f64 / 1e6)),
        ));
    }
    out
}
