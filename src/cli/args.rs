//! The arguments several commands share: how to read logs, where the tables come from
//! (a warehouse or log PATHs), a window of time, the query engine and output formats.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

#[derive(Args, Clone)]
pub(super) struct ReadArgs {
    /// Lines longer than this many bytes are rejected.
    #[arg(long, default_value_t = runlog_core::ingest::DEFAULT_MAX_LINE_BYTES)]
    pub(super) max_line_bytes: usize,
    /// The format of the input files. `auto` detects each file's format from its first
    /// records (a folder may mix formats); the others read every file as that source:
    /// runlog (docs/events.md), harness (deepseek-harness logs and captures), kestrel (runner
    /// events, NDJSON or SSE), codex (Codex CLI rollouts), claude-code (Claude Code
    /// transcripts with their subagents/ files), anthropic (Messages SSE chunks), openai
    /// (Responses SSE chunks), gemini-cli (Gemini CLI chats, `.json` documents or `.jsonl`).
    /// (`ingest` also takes it as `--format`; on `query` and `report`, `--format` is the
    /// output format.)
    #[arg(long = "input-format", default_value = "auto", value_name = "FORMAT", value_parser = parse_format)]
    pub(super) input_format: runlog_core::import::Format,
}

pub(super) fn parse_format(s: &str) -> Result<runlog_core::import::Format, String> {
    s.parse()
}

#[derive(Args, Clone)]
pub(super) struct Source {
    /// Read the tables of this warehouse (a path, a file:// URL, or s3://BUCKET/PREFIX,
    /// gs://BUCKET/PREFIX, az://CONTAINER/PREFIX with the `s3`, `gcs`, `azure` features)
    /// instead of log files (which may be in those stores too).
    #[arg(long, short = 'w')]
    pub(super) warehouse: Option<PathBuf>,
    #[command(flatten)]
    pub(super) read: ReadArgs,
    /// With log PATHs: read them through P spill partitions on disk into a temporary
    /// warehouse (under $TMPDIR, removed when done) and read the tables from there, as
    /// `ingest --spill-partitions P` would write them (a question that depends on some kinds
    /// of events only spills only those and builds only its tables, in memory); 0 reads them
    /// in memory. By default logs of 256 MiB or
    /// more take this way (one partition per 64 MiB), so that memory stays bounded; to query
    /// the same large logs again, `runlog ingest` them once and give --warehouse.
    #[arg(long, value_name = "P", conflicts_with = "warehouse")]
    pub(super) spill_partitions: Option<usize>,
}

/// `--since` / `--until`: the rows of a window of time (`runlog::query::restrict_to_window`).
#[derive(Args, Clone, Default)]
pub(super) struct WindowArgs {
    /// Keep only rows at or after T (RFC 3339 such as 2026-11-03T10:00:00Z, or a date
    /// 2026-11-03 meaning its 00:00 UTC); what a row's time is, table by table: see below.
    #[arg(long, value_name = "T")]
    pub(super) since: Option<String>,
    /// Keep only rows before T (exclusive: the window is [since, until)).
    #[arg(long, value_name = "T")]
    pub(super) until: Option<String>,
}

impl WindowArgs {
    pub(super) fn window(&self) -> Result<runlog::query::TimeWindow> {
        Ok(runlog::query::TimeWindow::parse(
            self.since.as_deref(),
            self.until.as_deref(),
        )?)
    }
}

#[derive(Args, Clone)]
pub(super) struct EngineArgs {
    /// The engine that runs the SQL: DataFusion in this process, or Apache Ballista (reads
    /// a --warehouse; needs a runlog built with `--features ballista`).
    #[arg(long, value_enum, default_value = "local")]
    pub(super) engine: EngineName,
    /// With --engine ballista: the Ballista scheduler to run on; without it, a standalone
    /// cluster (scheduler and executor) inside this process.
    #[arg(long, value_name = "df://HOST:PORT")]
    pub(super) scheduler: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum EngineName {
    Local,
    Ballista,
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum Format {
    Table,
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum ReportFormat {
    Table,
    Json,
    Markdown,
}
