//! What to generate ([`GenOptions`]: agents, seed, files, anomaly rate, layout, mix) and
//! what was written ([`GenStats`], with what ingest will find in it).

use runlog_core::error::{Error, Result};

use crate::generator::Expected;

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
    pub(crate) fn check(&self) -> Result<()> {
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

    pub(crate) fn rate(&self) -> f64 {
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
    /// in byte order of their paths, then line number), docs/semantics.md §1.
    pub expected_kept: u64,
    /// Lines ingest must count as duplicates: equal content to the kept line of their
    /// (root, seq).
    pub expected_duplicates: u64,
    /// Lines ingest must reject: bad lines (§7) and lines conflicting with a kept one (§1).
    /// `lines == expected_kept + expected_duplicates + expected_rejects`.
    pub expected_rejects: u64,
}

impl GenStats {
    pub(crate) fn add(&mut self, e: &Expected) {
        self.expected_kept += e.kept;
        self.expected_duplicates += e.duplicates;
        self.expected_rejects += e.rejects;
    }
}
