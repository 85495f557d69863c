//! The command line, one file per command: each holds its arguments (clap) and what
//! it does. This file has the arguments several commands share and their helpers.

mod baseline;
mod bench;
mod collect;
mod gen;
mod ingest;
pub mod memory;
mod query;
mod replay;
mod report;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use runlog::ingest::IngestOptions;
use runlog::pipeline::{CommitMode, Memory, WriteOptions};
use runlog::query::OutputFormat;

#[derive(Parser)]
#[command(
    name = "runlog",
    version,
    about = "Event-log analytics and replay for AI-agent runtimes",
    long_about = "Event-log analytics and replay for AI-agent runtimes.\n\n\
Reads recorded session event logs (JSONL, gzip, zstd), replays every agent through the\n\
interval reducer and answers with SQL how runs ended: finish reasons, turn states, error\n\
codes and their retryability, tool calls, callbacks and run attempts.",
    after_help = "Examples:\n  \
runlog report sample-logs\n  \
runlog ingest logs/ --warehouse wh\n  \
runlog query --warehouse wh \"SELECT finish_reason, count(*) FROM intervals GROUP BY 1\"\n  \
runlog query logs/ queries/finish_reasons.sql --format csv\n  \
runlog replay --warehouse wh --root s1 --at 42\n  \
tail -f live.jsonl | runlog replay --follow -"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read logs, reduce every agent, and write all tables as Parquet into a warehouse.
    #[command(
        after_help = "Files named on the command line are read whatever their name; inside \
folders, files ending .jsonl or .ndjson (optionally .gz / .zst) are read, .json files when\n\
they are Gemini CLI chats, and others skipped (counted; .json ones as skipped_json_files).\n\
Ingest replaces the warehouse's tables with those of this input, in one atomic commit;\n\
with --append it adds only what is new since the last ingests (runlog ingest --append\n\
logs/today/ -w wh: unchanged files skipped, grown files read from where they ended).\n\
With --shard I/N it keeps the agents of shard I of N and replaces only that shard's rows: run\n\
the N shards (in any order, or at once, on any machines that read the same inputs) into one\n\
warehouse and their union is this ingest. Both: N machines share one append (runlog ingest\n\
--append logs/today/ -w wh --shard 2/4 on the third of four; N divides 64), equal to one\n\
--append once all N have landed. Locations may be file:// URLs, or in object stores:\n\
s3://BUCKET/PREFIX (AWS_* environment), gs://BUCKET/PREFIX (GOOGLE_*), az://CONTAINER/PREFIX\n\
(AZURE_*), for the warehouse and for inputs (query, report and replay read such inputs too).\n\
An input URL naming an object reads it whatever its name; a prefix reads the objects under it\n\
whose names look like logs, as a folder. Objects are downloaded to a private temporary folder\n\
(removed at the end) and are shown by their URLs in every table and message.\n\
Example: runlog ingest s3://logs/2026/11/ extra.jsonl --warehouse s3://lake/runlog"
    )]
    Ingest(ingest::IngestArgs),
    /// Run one SQL statement over the tables (text, or a path to a .sql file).
    #[command(
        after_help = "Tables: events, intervals, turns, errors, tool_calls, callbacks, runs, \
rejects, agents, files.\nWith PATHs instead of --warehouse, the logs are ingested in memory first.\n\
--engine ballista runs the SQL on Apache Ballista over a --warehouse: a standalone cluster in\n\
this process, or the cluster of --scheduler df://HOST:PORT (build with --features ballista).\n\
--since/--until restrict every table to a window of time. A window [--since, --until) keeps:\n\
events, errors by their ts; intervals by opened_at; turns by the ts of their start event;\n\
tool_calls by their seq's event; callbacks by their open_seq's event; runs by their start_seq's\n\
event; agents whose first_ts..last_ts overlaps the window. rejects and files have no time and are\n\
kept whole; the whole tables stay readable as unfiltered.<table>.\n\
Example: runlog query --warehouse wh \"SELECT status, count(*) FROM intervals GROUP BY 1\"\n\
Example: runlog query --warehouse wh --since 2026-11-03 --until 2026-11-04 queries/finish_reasons.sql"
    )]
    Query(query::QueryArgs),
    /// The headline report: finish reasons, turn states, error codes, run attempts.
    #[command(
        after_help = "With --html FILE the report is also written as one self-contained HTML page \
(inline SVG charts beside the same tables; no scripts, fonts or network) and its path is printed \
on stderr. The text report still goes to stdout unless --quiet.\n\
With --html-dir DIR: DIR/index.html is that page plus a section listing the notable agents \
(protocol errors, runs that died on a delta, unsettled intervals, failed turns, retryable \
mismatches), each linked to its timeline page DIR/agents/<root>.html (at most --max-pages, \
default 200; the cap is stated on the page).\n\
--since/--until restrict the report to a window of time (as for `query`: intervals by opened_at,\n\
turns by their start, events and errors by ts, tool calls, callbacks and runs by their event's ts,\n\
agents by overlap; rejects and files have no time and are kept whole: see `runlog query --help`).\n\
--baseline OLD compares with a baseline (a warehouse, or log paths: repeat the flag); or\n\
--baseline-since/--baseline-until compare two windows of the same data. Every section then shows\n\
baseline → current and the change (counts; shares and retried/recovered rates in percentage\n\
points) and flags significant shifts: a pooled two-proportion z-test per share and rate, p-values\n\
corrected with Holm's step-down method over all of them, alpha = 0.05. In --format json every\n\
compared row carries baseline, current, change, p_value, p_holm and significant.\n\
Example: runlog report sample-logs --html report.html --quiet\n\
Example: runlog report --warehouse wh --html-dir out --quiet\n\
Example: runlog report --warehouse new --baseline old --format json\n\
Example: runlog report --warehouse wh --since 2026-11-08 --baseline-since 2026-11-01 --baseline-until 2026-11-08"
    )]
    Report(report::ReportArgs),
    /// One agent's timeline or its turn states as of a cursor; or follow a live stream.
    #[command(
        after_help = "Timeline: one JSON object per event, {cursor, type, session, turn, state}.\n\
Snapshot (--at SEQ): one state record per turn started at or before SEQ.\n\
Follow (--follow -): reduce events from standard input as they arrive.\n\
Page (--html FILE): the agent's whole life on a seq axis as one self-contained HTML page: a \
lane per session (subagents under the turn that spawned them), turns coloured by state, \
model calls, tool calls, callbacks, errors, intervals, run attempts and the voices; hover or \
click an element for its seq, time, row and state record.\n\
Example: runlog replay --warehouse wh --root s1 --html s1.html"
    )]
    Replay(replay::ReplayArgs),
    /// Write a deterministic, production-like log: same arguments, same bytes.
    #[command(
        after_help = "Examples:\n  runlog gen --agents 5500 --seed 1 --out big.jsonl      (~1.1M events, ~185 MB)\n  \
runlog gen --agents 200 --seed 7 --out logs/ --files 4 --anomalies 0.05\n  \
runlog gen --agents 100 --seed 1 --out small.jsonl.gz"
    )]
    Gen(gen::GenArgs),
    /// Time each pipeline stage and the peak memory after it, on logs or a generated one.
    ///
    /// The stages: read and decode, reduce, build the batches, write the warehouse.
    Bench(bench::BenchArgs),
    /// Receive OpenTelemetry traces and logs over OTLP/HTTP and fill a warehouse with them.
    #[command(
        after_help = "Exporters POST to /v1/traces and /v1/logs, protobuf (application/x-protobuf) or \
JSON\n(application/json), gzipped or not. Accepted requests are written to the spool (WH/_collect/,\n\
OTLP JSON lines) and committed in batches, each one new version whose tables are those of\n\
the whole spool (a commit costs a file ingest of all received so far: docs/collect.md). The\n\
warehouse is the receiver's own. A request is answered 200 only once its batch is\n\
committed, so killing the receiver loses nothing it acknowledged (on start, what the spool\n\
holds uncommitted lands first), and a request sent again adds only the spans the spool\n\
lacks. Spans of one trace sent in different requests become one agent. runlog query|report\n\
--warehouse WH read whole commits meanwhile.\n\
Answers: 400 malformed body, 401 missing or wrong bearer token (with --token), 413 body over\n\
--max-body, 415 other media types; 200 with partial_success counting the spans or log\n\
records rejected (invalid trace or span ids); 503 when a commit failed (exporters retry).\n\
SIGTERM or SIGINT commits the last batch, answers it and exits.\n\
Point an OpenTelemetry SDK at it: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318\n\
Example: runlog collect --warehouse wh --flush-secs 2\n\
Example: runlog collect -w wh --listen 0.0.0.0:4318 --token \"$TOKEN\""
    )]
    Collect(collect::CollectArgs),
}

#[derive(Args, Clone)]
struct ReadArgs {
    /// Lines longer than this many bytes are rejected.
    #[arg(long, default_value_t = runlog::ingest::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// The format of the input files. `auto` detects each file's format from its first
    /// records (a folder may mix formats); the others read every file as that source:
    /// runlog (docs/events.md), harness (deepseek-harness logs and captures), kestrel (runner
    /// events, NDJSON or SSE), codex (Codex CLI rollouts), claude-code (Claude Code
    /// transcripts with their subagents/ files), anthropic (Messages SSE chunks), openai
    /// (Responses SSE chunks), gemini-cli (Gemini CLI chats, `.json` documents or `.jsonl`).
    /// (`ingest` also takes it as `--format`; on `query` and `report`, `--format` is the
    /// output format.)
    #[arg(long = "input-format", default_value = "auto", value_name = "FORMAT", value_parser = parse_format)]
    input_format: runlog::import::Format,
}

fn parse_format(s: &str) -> Result<runlog::import::Format, String> {
    s.parse()
}

#[derive(Args, Clone)]
struct Source {
    /// Read the tables of this warehouse (a path, a file:// URL, or s3://BUCKET/PREFIX,
    /// gs://BUCKET/PREFIX, az://CONTAINER/PREFIX with the `s3`, `gcs`, `azure` features)
    /// instead of log files (which may be in those stores too).
    #[arg(long, short = 'w')]
    warehouse: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    /// With log PATHs: read them through P spill partitions on disk into a temporary
    /// warehouse (under $TMPDIR, removed when done) and read the tables from there, as
    /// `ingest --spill-partitions P` would write them; 0 reads them in memory. By default logs of 256 MiB or
    /// more take this way (one partition per 64 MiB), so that memory stays bounded; to query
    /// the same large logs again, `runlog ingest` them once and give --warehouse.
    #[arg(long, value_name = "P", conflicts_with = "warehouse")]
    spill_partitions: Option<usize>,
}

/// `--since` / `--until`: the rows of a window of time (`runlog::query::restrict_to_window`).
#[derive(Args, Clone, Default)]
struct WindowArgs {
    /// Keep only rows at or after T (RFC 3339 such as 2026-11-03T10:00:00Z, or a date
    /// 2026-11-03 meaning its 00:00 UTC); what a row's time is, table by table: see below.
    #[arg(long, value_name = "T")]
    since: Option<String>,
    /// Keep only rows before T (exclusive: the window is [since, until)).
    #[arg(long, value_name = "T")]
    until: Option<String>,
}

impl WindowArgs {
    fn window(&self) -> Result<runlog::query::TimeWindow> {
        Ok(runlog::query::TimeWindow::parse(
            self.since.as_deref(),
            self.until.as_deref(),
        )?)
    }
}

#[derive(Args, Clone)]
struct EngineArgs {
    /// The engine that runs the SQL: DataFusion in this process, or Apache Ballista (reads
    /// a --warehouse; needs a runlog built with `--features ballista`).
    #[arg(long, value_enum, default_value = "local")]
    engine: EngineName,
    /// With --engine ballista: the Ballista scheduler to run on; without it, a standalone
    /// cluster (scheduler and executor) inside this process.
    #[arg(long, value_name = "df://HOST:PORT")]
    scheduler: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum EngineName {
    Local,
    Ballista,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReportFormat {
    Table,
    Json,
    Markdown,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Ingest options with a progress bar on a terminal.
fn ingest_options(
    read: &ReadArgs,
    inputs: &runlog::ingest::Inputs,
) -> (IngestOptions, Option<indicatif::ProgressBar>) {
    progress_options(read, || {
        inputs
            .files
            .iter()
            .filter_map(|f| std::fs::metadata(&f.path).ok())
            .map(|m| m.len())
            .sum()
    })
}

/// The read options, with a progress bar over `total` bytes on a terminal.
fn progress_options(
    read: &ReadArgs,
    total: impl FnOnce() -> u64,
) -> (IngestOptions, Option<indicatif::ProgressBar>) {
    let mut opts = IngestOptions {
        max_line_bytes: read.max_line_bytes,
        format: read.input_format,
        ..Default::default()
    };
    if !std::io::stderr().is_terminal() {
        return (opts, None);
    }
    let bar = indicatif::ProgressBar::new(total());
    bar.set_style(bar_style(
        "{spinner} reading [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ));
    let b = bar.clone();
    opts.progress = Some(Arc::new(move |n| b.inc(n)));
    (opts, Some(bar))
}

/// The style of the CLI's progress bars, from an indicatif template.
fn bar_style(template: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// A progress bar for downloads of store objects on a terminal (none when stderr is not
/// one, or with `quiet`): bytes received of the listed sizes, objects done of all. Drawn
/// in `multi` when given (beside the reading bar), else alone; it shows only while objects
/// download, and goes when they are done.
fn download_progress(
    quiet: bool,
    multi: Option<&indicatif::MultiProgress>,
) -> Option<runlog::inputs::DownloadProgress> {
    use runlog::inputs::DownloadEvent;
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    #[derive(Default)]
    struct State {
        bar: Option<indicatif::ProgressBar>,
        done: u64,
        objects: u64,
    }
    let multi = multi.cloned();
    let state = std::sync::Mutex::new(State::default());
    Some(Arc::new(move |e| {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        match e {
            DownloadEvent::Started { objects, bytes } => {
                st.objects += objects;
                match &st.bar {
                    Some(b) => b.inc_length(bytes),
                    None => {
                        let b = indicatif::ProgressBar::new(bytes);
                        b.set_style(bar_style(
                            "{spinner} downloading [{bar:30}] {bytes}/{total_bytes} {msg} \
                             {bytes_per_sec} eta {eta}",
                        ));
                        st.bar = Some(match &multi {
                            Some(m) => m.insert(0, b),
                            None => b,
                        });
                    }
                }
            }
            DownloadEvent::Bytes(n) => {
                if let Some(b) = &st.bar {
                    b.inc(n);
                }
            }
            DownloadEvent::Object => st.done += 1,
            DownloadEvent::Finished => {
                if let Some(b) = st.bar.take() {
                    b.finish_and_clear();
                }
                *st = State::default();
                return;
            }
        }
        if let Some(b) = &st.bar {
            b.set_message(format!("{}/{} objects", st.done, st.objects));
        }
    }))
}

/// How much memory reading these inputs may hold: `--spill-partitions P` (0: in memory),
/// else [`Memory::auto_for`]. A spilled read hands freed memory back to the OS between
/// partitions.
fn memory_for(spill_partitions: Option<usize>, inputs: &runlog::ingest::Inputs) -> Memory {
    let memory = match spill_partitions {
        Some(0) => Memory::InMemory,
        Some(p) => Memory::Spilled(p),
        None => Memory::auto_for(inputs),
    };
    if let Memory::Spilled(_) = memory {
        // Partitions come and go one after another: freed memory goes back to the OS, or
        // fragments would add up over them; but not at once (mimalloc's default, 10 ms),
        // since the next partition needs as much again within the second.
        memory::set_purge_delay(memory::SPILL_PURGE_DELAY_MS);
    }
    memory
}

/// A query context, and the temporary warehouse it reads when its logs were too large to
/// hold in memory (removed when the context is dropped).
struct QueryContext {
    ctx: datafusion::prelude::SessionContext,
    _scratch: Option<Arc<tempfile::TempDir>>,
}

impl QueryContext {
    /// A second context over the same tables ([`runlog::query::context_like`]), keeping
    /// the temporary warehouse while either is alive.
    fn twin(&self, rt: &tokio::runtime::Runtime) -> Result<QueryContext> {
        Ok(QueryContext {
            ctx: rt.block_on(runlog::query::context_like(&self.ctx))?,
            _scratch: self._scratch.clone(),
        })
    }
}

impl std::ops::Deref for QueryContext {
    type Target = datafusion::prelude::SessionContext;
    fn deref(&self) -> &Self::Target {
        &self.ctx
    }
}

impl From<datafusion::prelude::SessionContext> for QueryContext {
    fn from(ctx: datafusion::prelude::SessionContext) -> Self {
        QueryContext {
            ctx,
            _scratch: None,
        }
    }
}

/// A context over a warehouse, or over logs ([`read_logs`]: in memory, only the `tables`
/// built, all when `None`; or, when large, a temporary warehouse: a query of 2 GB of logs
/// held 3.7 GB in memory, 0.6 GB so).
fn context(
    source: &Source,
    paths: &[PathBuf],
    tables: Option<&[&'static str]>,
) -> Result<QueryContext> {
    match &source.warehouse {
        Some(w) => {
            if !paths.is_empty() {
                bail!("give either --warehouse or log PATHs, not both");
            }
            Ok(runlog::query::context_from_warehouse(w)?.into())
        }
        None => match read_logs(source, paths)? {
            Logs::Loaded(loaded) => {
                let batches = match tables {
                    Some(t) => loaded.some_batches(t)?,
                    None => loaded.batches()?,
                };
                Ok(runlog::query::context_from_batches(batches)?.into())
            }
            Logs::Stored(scratch) => Ok(QueryContext {
                ctx: runlog::query::context_from_warehouse(scratch.path())?,
                _scratch: Some(Arc::new(scratch)),
            }),
        },
    }
}

/// Log PATHs read for `query`, `report` or `replay`: in memory, or, when they are large
/// ([`memory_for`]), through spill partitions into a temporary warehouse (removed when
/// dropped), so that reading 2 GB of logs holds about what an ingest of them does.
enum Logs {
    Loaded(Box<runlog::Loaded>),
    Stored(tempfile::TempDir),
}

fn read_logs(source: &Source, paths: &[PathBuf]) -> Result<Logs> {
    if paths.is_empty() {
        bail!("give log PATHs or --warehouse DIR");
    }
    let resolved = runlog::inputs::resolve_with(paths, download_progress(false, None))?;
    let (opts, bar) = ingest_options(&source.read, &resolved.inputs);
    let logs = match memory_for(source.spill_partitions, &resolved.inputs) {
        Memory::InMemory => {
            runlog::load_inputs(&resolved.inputs, &opts, None).map(|l| Logs::Loaded(Box::new(l)))
        }
        memory => {
            let scratch = tempfile::Builder::new()
                .prefix("runlog-logs-")
                .tempdir()
                .context("making a temporary warehouse (set TMPDIR to choose where)")?;
            let write = WriteOptions {
                commit: CommitMode::Full,
                memory,
                max_rejects: None,
                gc: runlog::commit::GcPolicy::default(),
            };
            runlog::pipeline::ingest_resolved(&resolved, &opts, scratch.path(), &write)
                .map(|_| Logs::Stored(scratch))
        }
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(logs?)
}

/// A context for the chosen engine: the local one over a warehouse or logs, or Ballista
/// over a warehouse (its servers, when standalone, run on `rt`).
fn engine_context(
    engine: &EngineArgs,
    source: &Source,
    paths: &[PathBuf],
    tables: Option<&[&'static str]>,
    rt: &tokio::runtime::Runtime,
) -> Result<QueryContext> {
    let which = match engine.engine {
        EngineName::Local => runlog::engine::Engine::Local,
        EngineName::Ballista => runlog::engine::Engine::Ballista,
    };
    if which == runlog::engine::Engine::Local && engine.scheduler.is_none() {
        return context(source, paths, tables);
    }
    let Some(w) = &source.warehouse else {
        bail!(
            "--engine ballista reads a warehouse: ingest the logs first and give --warehouse DIR"
        );
    };
    if !paths.is_empty() {
        bail!("give either --warehouse or log PATHs, not both");
    }
    Ok(rt
        .block_on(runlog::engine::context(
            which,
            w,
            engine.scheduler.as_deref(),
        ))?
        .into())
}

/// Every warehouse and input location given as a `file://` URL becomes its local path
/// (`s3://`, `gs://` and `az://` locations stay URLs: they are opened as object stores).
fn localize(cmd: &mut Command) -> Result<()> {
    fn fix(p: &mut PathBuf) -> Result<()> {
        if !runlog::objstore::is_supported_remote(p) {
            *p = runlog::location::local_path(p)?;
        }
        Ok(())
    }
    if let Command::Report(a) = cmd {
        a.baseline.baseline.iter_mut().try_for_each(fix)?;
    }
    match cmd {
        Command::Ingest(a) => {
            fix(&mut a.warehouse)?;
            a.paths.iter_mut().try_for_each(fix)?;
        }
        Command::Query(query::QueryArgs { source, args, .. }) => {
            if let Some(w) = &mut source.warehouse {
                fix(w)?;
            }
            let n = args.len().saturating_sub(1);
            for a in &mut args[..n] {
                let mut p = PathBuf::from(a.as_str());
                fix(&mut p)?;
                *a = p.to_string_lossy().into_owned();
            }
        }
        Command::Report(report::ReportArgs { source, paths, .. })
        | Command::Replay(replay::ReplayArgs { source, paths, .. }) => {
            if let Some(w) = &mut source.warehouse {
                fix(w)?;
            }
            paths.iter_mut().try_for_each(fix)?;
        }
        // The benchmark times the reading of local files.
        Command::Bench(a) => a.paths.iter_mut().try_for_each(|p| -> Result<()> {
            *p = runlog::location::local_path(p)?;
            Ok(())
        })?,
        Command::Gen(_) | Command::Collect(_) => {}
    }
    Ok(())
}

/// Runs one command.
pub fn run(mut cli: Cli) -> Result<()> {
    localize(&mut cli.command)?;
    match cli.command {
        Command::Ingest(a) => ingest::run(a),
        Command::Query(a) => query::run(a),
        Command::Report(a) => report::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Gen(a) => gen::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Collect(a) => collect::run(a),
    }
}

/// A fresh scratch folder under the system's temporary folder.
fn tempfile_dir() -> Result<PathBuf> {
    let p = std::env::temp_dir().join(format!("runlog-bench-{}", runlog::commit::new_ingest_id()));
    std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
    Ok(p)
}
