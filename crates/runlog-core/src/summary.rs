//! The accounting of one ingest: lines read = kept + duplicates + rejects, per file and in
//! total, with the agents and intervals it produced. Printed after an ingest, written by
//! `--summary-json` and stored in the warehouse manifest.

use serde::{Deserialize, Serialize};

use crate::ingest::{self, Ingested};

/// The accounting of one ingest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub files: u64,
    pub skipped_files: u64,
    /// Of the skipped files, the `.json` files (documents in no format an importer reads).
    #[serde(default)]
    pub skipped_json_files: u64,
    pub bytes: u64,
    pub lines_read: u64,
    pub blank_lines: u64,
    pub kept: u64,
    pub duplicates: u64,
    pub rejects: u64,
    pub agents: u64,
    pub intervals: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    /// `lines_read == kept + duplicates + rejects`.
    pub adds_up: bool,
    pub per_file: Vec<ingest::FileSummary>,
}

/// The summary of an ingest that made `intervals` intervals and took `seconds`.
pub fn summarize(ing: &Ingested, intervals: u64, seconds: f64) -> Summary {
    let t = ing.totals();
    Summary {
        files: ing.files.len() as u64,
        skipped_files: ing.skipped_files.len() as u64,
        skipped_json_files: ingest::count_json(&ing.skipped_files),
        bytes: t.bytes,
        lines_read: t.lines,
        blank_lines: t.blank,
        kept: t.kept,
        duplicates: t.duplicates,
        rejects: t.rejects,
        agents: ing.agents.len() as u64,
        intervals,
        seconds,
        mb_per_s: if seconds > 0.0 {
            t.bytes as f64 / 1e6 / seconds
        } else {
            0.0
        },
        adds_up: t.lines == t.kept + t.duplicates + t.rejects,
        per_file: ing.files.clone(),
    }
}
