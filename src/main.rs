//! The `runlog` command line: a thin layer over the library that parses arguments,
//! shows progress, prints results and maps errors to exit codes (0 ok, 1 failure, 2 usage).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use runlog::ingest::IngestOptions;

/// mimalloc: ingest allocates many small strings; the system allocator spent a quarter of
/// the time in malloc/free (measured with perf on a 1.1M-event log).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's option setter (linked in with the allocator above).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Keeps freed memory for reuse instead of handing it back to the OS 10 ms later (the
/// default): ingest frees and allocates in waves (events, then batches, then Parquet pages),
/// and on the machines measured, zeroing fresh pages (`clear_page_erms` in the kernel) took
/// up to 40 % of an ingest when memory went back and forth. Peak RSS is unchanged for an
/// ingest in memory; a spilled ingest sets the default back (see there).
fn keep_freed_memory() {
    set_purge_delay(-1);
}

/// Asks Linux for ordinary 4 KiB pages instead of transparent huge pages (THP), for this
/// process: mimalloc advises huge pages for its arenas, and each first touch of one then
/// zeroes 2 MiB at once, used or not. On the VM measured, after another process (DuckDB)
/// had just freed its memory, an ingest of a 211 MB log spent 1.6-1.9 s in the kernel
/// zeroing pages with THP, 0.30-0.33 s without (wall 1.76-1.95 s against 1.03-1.13 s), and
/// its peak RSS fell from ~430 to ~370 MB. Elsewhere a no-op.
fn small_pages() {
    #[cfg(target_os = "linux")]
    {
        extern "C" {
            fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
        }
        /// `PR_SET_THP_DISABLE` in `<linux/prctl.h>`.
        const PR_SET_THP_DISABLE: std::ffi::c_int = 41;
        // SAFETY: sets a flag of this process; the arguments are the integers prctl(2)
        // documents for this option. A failure (an old kernel) leaves THP as it was.
        unsafe {
            prctl(
                PR_SET_THP_DISABLE,
                1 as std::ffi::c_ulong,
                0 as std::ffi::c_ulong,
                0 as std::ffi::c_ulong,
                0 as std::ffi::c_ulong,
            );
        }
    }
}

/// mimalloc's own purge delay, in milliseconds.
const MI_DEFAULT_PURGE_DELAY_MS: std::ffi::c_long = 10;

fn set_purge_delay(ms: std::ffi::c_long) {
    // SAFETY: sets an integer option; mimalloc reads options atomically.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}
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
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read logs, reduce every agent, and write all tables as Parquet into a warehouse.
    #[command(
        after_help = "Files named on the command line are read whatever their name; inside \
folders, files ending .jsonl or .ndjson (optionally .gz / .zst) are read and others skipped.\n\
Ingest replaces the warehouse's tables with those of this input, in one atomic commit.\n\
With --shard I/N it keeps the agents of shard I of N and replaces only that shard's rows: run\n\
the N shards (in any order, or at once, on any machines that read the same inputs) into one\n\
warehouse and their union is this ingest. Locations may be file:// URLs; s3:// and other\n\
object stores are not supported yet."
    )]
    Ingest {
        /// Log files and folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The warehouse folder, a path or a file:// URL (created if missing).
        #[arg(long, short = 'w')]
        warehouse: PathBuf,
        #[command(flatten)]
        read: ReadArgs,
        /// Fail (and write nothing) when rejects exceed N lines, or a share like 0.5%.
        #[arg(long, value_name = "N|P%")]
        max_rejects: Option<String>,
        /// Also write the summary as JSON to this file ('-' for stdout).
        #[arg(long, value_name = "FILE")]
        summary_json: Option<PathBuf>,
        /// Print no summary.
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Keep only the agents of shard I of N (stable hash of the root) and commit them
        /// beside the other shards of N in the warehouse: the N shards together equal one
        /// full ingest. Every shard reads the same inputs; shard 0 also writes the rejects
        /// and files tables.
        #[arg(long, value_name = "I/N")]
        shard: Option<runlog::shard::Shard>,
        /// With --shard: when the warehouse holds a full ingest or shards of another N, drop
        /// them (without it, such a shard is refused).
        #[arg(long, requires = "shard")]
        reshard: bool,
        /// The format of the input files (the same as --input-format): auto, runlog,
        /// harness, kestrel, codex, claude-code, anthropic, openai.
        #[arg(long = "format", value_name = "FORMAT", value_parser = parse_format, conflicts_with = "input_format")]
        format: Option<runlog::import::Format>,
        /// Ingest through P partitions on disk (by hash of root), so that memory holds one
        /// partition's agents at a time: for logs larger than memory. 0 ingests in memory.
        /// Default: in memory below 1 GiB of input, else one partition per 32 MiB of input
        /// (compressed files counted 8x). Not with --shard.
        #[arg(long, value_name = "P", conflicts_with = "shard")]
        spill_partitions: Option<usize>,
    },
    /// Run one SQL statement over the tables (text, or a path to a .sql file).
    #[command(
        after_help = "Tables: events, intervals, turns, errors, tool_calls, callbacks, runs, \
rejects, agents, files.\nWith PATHs instead of --warehouse, the logs are ingested in memory first.\n\
--engine ballista runs the SQL on Apache Ballista over a --warehouse: a standalone cluster in\n\
this process, or the cluster of --scheduler df://HOST:PORT (build with --features ballista).\n\
Example: runlog query --warehouse wh \"SELECT status, count(*) FROM intervals GROUP BY 1\""
    )]
    Query {
        #[command(flatten)]
        source: Source,
        /// Log PATHs (unless --warehouse) followed by the SQL text or a .sql file.
        #[arg(required = true, value_name = "PATH... SQL")]
        args: Vec<String>,
        /// Output format.
        #[arg(long, short = 'f', value_enum, default_value = "table")]
        format: Format,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// The headline report: finish reasons, turn states, error codes, run attempts.
    #[command(
        after_help = "With --html FILE the report is also written as one self-contained HTML page \
(inline SVG charts beside the same tables; no scripts, fonts or network) and its path is printed \
on stderr. The text report still goes to stdout unless --quiet.\n\
Example: runlog report sample-logs --html report.html --quiet"
    )]
    Report {
        #[command(flatten)]
        source: Source,
        /// Log files and folders (unless --warehouse).
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, short = 'f', value_enum, default_value = "table")]
        format: ReportFormat,
        /// Also write the report as a self-contained HTML page with charts to FILE.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Print nothing on stdout (use with --html).
        #[arg(long, short = 'q')]
        quiet: bool,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// One agent's timeline or its turn states as of a cursor; or follow a live stream.
    #[command(
        after_help = "Timeline: one JSON object per event, {cursor, type, session, turn, state}.\n\
Snapshot (--at SEQ): one state record per turn started at or before SEQ.\n\
Follow (--follow -): reduce events from standard input as they arrive."
    )]
    Replay {
        #[command(flatten)]
        source: Source,
        /// Log files and folders (unless --warehouse or --follow).
        paths: Vec<PathBuf>,
        /// The agent's root session id.
        #[arg(long, required_unless_present = "follow")]
        root: Option<String>,
        /// Show every turn's state as of this cursor (seq).
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
        /// Read events from standard input ('-') and print each change at once.
        #[arg(long, value_name = "-", conflicts_with_all = ["root", "at"])]
        follow: Option<String>,
    },
    /// Write a deterministic, production-like log: same arguments, same bytes.
    #[command(
        after_help = "Examples:\n  runlog gen --agents 5500 --seed 1 --out big.jsonl      (~1.1M events, ~185 MB)\n  \
runlog gen --agents 200 --seed 7 --out logs/ --files 4 --anomalies 0.05\n  \
runlog gen --agents 100 --seed 1 --out small.jsonl.gz"
    )]
    Gen {
        /// Number of agents (root sessions).
        #[arg(long, default_value_t = 100)]
        agents: u64,
        /// Seed of the generator.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output file (.jsonl, .jsonl.gz, .jsonl.zst) or folder; standard output when absent.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
        /// Spread the agents over this many files (into the --out folder).
        #[arg(long, default_value_t = 1)]
        files: u32,
        /// Rate of anomalies: duplicates, bad lines, truncated agents, malformed turn ends.
        #[arg(long, default_value_t = 0.0)]
        anomalies: f64,
        /// How lines spread over the files: by-agent (each agent's lines together in one
        /// file), rotated (files are consecutive time windows, agents interleaved) or
        /// scattered (runs of an agent's lines over files, out of seq order).
        #[arg(long, default_value = "by-agent")]
        layout: runlog::gen::Layout,
        /// The events written: deltas (streamed logs, ~69% text/reasoning deltas) or
        /// persisted (few deltas, ~44 events per agent, as persisted session logs keep).
        #[arg(long, default_value = "deltas")]
        mix: runlog::gen::Mix,
    },
    /// Time each pipeline stage (read+decode, reduce, batches, write) and the peak memory after
    /// each, on logs or a generated one.
    Bench {
        /// Log files and folders; without them, a log of --agents generated agents.
        paths: Vec<PathBuf>,
        /// Agents to generate when no PATH is given.
        #[arg(long, default_value_t = 2000)]
        agents: u64,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Clone)]
struct ReadArgs {
    /// Lines longer than this many bytes are rejected.
    #[arg(long, default_value_t = runlog::ingest::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// The format of the input files. `auto` detects each file's format from its first
    /// records (a folder may mix formats); the others read every file as that source:
    /// runlog (EVENTS.md), harness (deepseek-harness logs and captures), kestrel (runner
    /// events, NDJSON or SSE), codex (Codex CLI rollouts), claude-code (Claude Code
    /// transcripts with their subagents/ files), anthropic (Messages SSE chunks), openai
    /// (Responses SSE chunks).
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
    /// Read the tables of this warehouse (a path or a file:// URL) instead of log files.
    #[arg(long, short = 'w')]
    warehouse: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
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

fn main() -> ExitCode {
    small_pages();
    keep_freed_memory();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let mut msg = format!("runlog: {e}");
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    msg.push_str(": ");
                    msg.push_str(&c);
                }
            }
            let _ = writeln!(std::io::stderr(), "{msg}");
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(c.downcast_ref::<runlog::Error>(),
                Some(runlog::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Ingest options with a progress bar on a terminal.
fn ingest_options(
    read: &ReadArgs,
    paths: &[PathBuf],
) -> (IngestOptions, Option<indicatif::ProgressBar>) {
    let mut opts = IngestOptions {
        max_line_bytes: read.max_line_bytes,
        format: read.input_format,
        ..Default::default()
    };
    if !std::io::stderr().is_terminal() {
        return (opts, None);
    }
    let total: u64 = runlog::ingest::discover(paths)
        .map(|(files, _)| {
            files
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} reading [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let b = bar.clone();
    opts.progress = Some(Arc::new(move |n| b.inc(n)));
    (opts, Some(bar))
}

fn load(read: &ReadArgs, paths: &[PathBuf]) -> Result<runlog::Loaded> {
    load_shard(read, paths, None)
}

fn load_shard(
    read: &ReadArgs,
    paths: &[PathBuf],
    shard: Option<runlog::shard::Shard>,
) -> Result<runlog::Loaded> {
    let (opts, bar) = ingest_options(read, paths);
    let loaded = runlog::load_shard(paths, &opts, shard);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(loaded?)
}

/// A context over a warehouse, or over logs ingested in memory; with logs, only the
/// `tables` are built (all when `None`).
fn context(
    source: &Source,
    paths: &[PathBuf],
    tables: Option<&[&'static str]>,
) -> Result<datafusion::prelude::SessionContext> {
    match &source.warehouse {
        Some(w) => {
            if !paths.is_empty() {
                bail!("give either --warehouse or log PATHs, not both");
            }
            Ok(runlog::query::context_from_warehouse(w)?)
        }
        None => {
            if paths.is_empty() {
                bail!("give log PATHs or --warehouse DIR");
            }
            let loaded = load(&source.read, paths)?;
            let batches = match tables {
                Some(t) => loaded.some_batches(t)?,
                None => loaded.batches()?,
            };
            Ok(runlog::query::context_from_batches(batches)?)
        }
    }
}

/// A context for the chosen engine: the local one over a warehouse or logs, or Ballista
/// over a warehouse (its servers, when standalone, run on `rt`).
fn engine_context(
    engine: &EngineArgs,
    source: &Source,
    paths: &[PathBuf],
    tables: Option<&[&'static str]>,
    rt: &tokio::runtime::Runtime,
) -> Result<datafusion::prelude::SessionContext> {
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
    Ok(rt.block_on(runlog::engine::context(
        which,
        w,
        engine.scheduler.as_deref(),
    ))?)
}

/// Every warehouse and input location given as a `file://` URL becomes its local path.
fn localize(cmd: &mut Command) -> Result<()> {
    fn fix(p: &mut PathBuf) -> Result<()> {
        *p = runlog::location::local_path(p)?;
        Ok(())
    }
    match cmd {
        Command::Ingest {
            paths, warehouse, ..
        } => {
            fix(warehouse)?;
            paths.iter_mut().try_for_each(fix)?;
        }
        Command::Query { source, args, .. } => {
            if let Some(w) = &mut source.warehouse {
                fix(w)?;
            }
            let n = args.len().saturating_sub(1);
            for a in &mut args[..n] {
                let p = runlog::location::local_path(Path::new(a.as_str()))?;
                *a = p.to_string_lossy().into_owned();
            }
        }
        Command::Report { source, paths, .. } | Command::Replay { source, paths, .. } => {
            if let Some(w) = &mut source.warehouse {
                fix(w)?;
            }
            paths.iter_mut().try_for_each(fix)?;
        }
        Command::Bench { paths, .. } => paths.iter_mut().try_for_each(fix)?,
        Command::Gen { .. } => {}
    }
    Ok(())
}

/// Spill partitions for an input of this size: none below 1 GiB, else one per 32 MiB
/// (gzip and zstd files counted at 8 times their size).
fn auto_partitions(paths: &[PathBuf]) -> usize {
    let Ok((files, _)) = runlog::ingest::discover(paths) else {
        return 0;
    };
    let bytes: u64 = files
        .iter()
        .map(|f| {
            let len = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
            let name = f.to_string_lossy();
            if name.ends_with(".gz") || name.ends_with(".zst") {
                len * 8
            } else {
                len
            }
        })
        .sum();
    if bytes < 1 << 30 {
        0
    } else {
        bytes.div_ceil(32 << 20) as usize
    }
}

fn parse_max_rejects(s: &str, lines: u64) -> Result<u64> {
    if let Some(p) = s.strip_suffix('%') {
        let pct: f64 = p
            .trim()
            .parse()
            .with_context(|| format!("--max-rejects {s:?}: not a percentage"))?;
        Ok(((pct / 100.0) * lines as f64).floor() as u64)
    } else {
        s.trim()
            .parse()
            .with_context(|| format!("--max-rejects {s:?}: not a count or a percentage like 0.5%"))
    }
}

fn print_summary(s: &runlog::Summary, warehouse: &Path) {
    let mut e = std::io::stderr();
    let _ = writeln!(
        e,
        "ingested {} file(s){} into {}",
        s.files,
        if s.skipped_files > 0 {
            format!(" ({} skipped by name)", s.skipped_files)
        } else {
            String::new()
        },
        warehouse.display()
    );
    let _ = writeln!(
        e,
        "  lines read {}  = kept {} + duplicates {} + rejects {}{}",
        s.lines_read,
        s.kept,
        s.duplicates,
        s.rejects,
        if s.adds_up { "" } else { "  (DOES NOT ADD UP)" }
    );
    let _ = writeln!(
        e,
        "  agents {}  intervals {}  blank lines {}",
        s.agents, s.intervals, s.blank_lines
    );
    let _ = writeln!(
        e,
        "  {:.2} s  {:.1} MB/s  ({} bytes)",
        s.seconds, s.mb_per_s, s.bytes
    );
    if s.rejects > 0 {
        let _ = writeln!(
            e,
            "  see the rejects: runlog query --warehouse {} \"SELECT * FROM rejects\"",
            warehouse.display()
        );
    }
}

fn run(mut cli: Cli) -> Result<()> {
    localize(&mut cli.command)?;
    match cli.command {
        Command::Ingest {
            paths,
            warehouse,
            read,
            max_rejects,
            summary_json,
            quiet,
            shard,
            reshard,
            spill_partitions,
            format,
        } => {
            let mut read = read;
            if let Some(f) = format {
                read.input_format = f;
            }
            let start = std::time::Instant::now();
            let partitions = match (spill_partitions, shard) {
                (Some(p), _) => p,
                (None, Some(_)) => 0,
                (None, None) => auto_partitions(&paths),
            };
            if partitions > 0 {
                // Partitions come and go one after another: freed memory goes back to the
                // OS (mimalloc's default delay), or fragments would add up over them.
                set_purge_delay(MI_DEFAULT_PURGE_DELAY_MS);
                let (opts, bar) = ingest_options(&read, &paths);
                let summary = runlog::spill::ingest_to_warehouse(
                    &paths,
                    &opts,
                    &warehouse,
                    partitions,
                    |s| match &max_rejects {
                        Some(limit) => {
                            let max = parse_max_rejects(limit, s.lines_read)
                                .map_err(|e| runlog::Error::Invalid(format!("{e:#}")))?;
                            if s.rejects > max {
                                return Err(runlog::Error::TooManyRejects {
                                    rejects: s.rejects,
                                    lines: s.lines_read,
                                    limit: limit.clone(),
                                });
                            }
                            Ok(())
                        }
                        None => Ok(()),
                    },
                );
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                let summary = summary?;
                if !quiet {
                    print_summary(&summary, &warehouse);
                    eprintln!("  spilled through {partitions} partition(s)");
                }
                if let Some(p) = summary_json {
                    let text = serde_json::to_string_pretty(&summary)?;
                    if p.as_os_str() == "-" {
                        println!("{text}");
                    } else {
                        std::fs::write(&p, text)
                            .with_context(|| format!("writing {}", p.display()))?;
                    }
                }
                return Ok(());
            }
            if let Some(s) = shard {
                // Refuse a shard the warehouse will not take before reading any input.
                runlog::shard::precheck(&warehouse, s, reshard)?;
            }
            // Refuses the ingest, before anything is written, when it has too many rejects.
            let check_rejects = |t: &runlog::ingest::FileSummary| -> runlog::Result<()> {
                let Some(limit) = &max_rejects else {
                    return Ok(());
                };
                let max = parse_max_rejects(limit, t.lines)
                    .map_err(|e| runlog::Error::Invalid(format!("{e:#}")))?;
                if t.rejects > max {
                    return Err(runlog::Error::TooManyRejects {
                        rejects: t.rejects,
                        lines: t.lines,
                        limit: limit.clone(),
                    });
                }
                Ok(())
            };
            let (loaded, shard_status) = match shard {
                Some(s) => {
                    let loaded = load_shard(&read, &paths, Some(s))?;
                    check_rejects(&loaded.ingested.totals())?;
                    let mut summary = loaded.summary.clone();
                    summary.seconds = start.elapsed().as_secs_f64();
                    let status = runlog::shard::write_shard(
                        &warehouse,
                        s,
                        &loaded.ingested,
                        loaded.batches()?,
                        serde_json::to_value(&summary)?,
                        reshard,
                    )?
                    .1;
                    (loaded, Some(status))
                }
                None => {
                    let (opts, bar) = ingest_options(&read, &paths);
                    let loaded =
                        runlog::load_into_warehouse(&paths, &opts, &warehouse, check_rejects);
                    if let Some(b) = bar {
                        b.finish_and_clear();
                    }
                    (loaded?, None)
                }
            };
            let mut summary = loaded.summary.clone();
            // Everything is written: the process ends soon, and freeing a million events
            // one by one would only delay that (about a tenth of a second per million).
            std::mem::forget(loaded);
            summary.seconds = start.elapsed().as_secs_f64();
            summary.mb_per_s = summary.bytes as f64 / 1e6 / summary.seconds.max(1e-9);
            if !quiet {
                print_summary(&summary, &warehouse);
                if let Some(st) = &shard_status {
                    eprint!("{}", st.render());
                }
            }
            if let Some(p) = summary_json {
                let text = serde_json::to_string_pretty(&summary)?;
                if p.as_os_str() == "-" {
                    println!("{text}");
                } else {
                    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
                }
            }
            Ok(())
        }
        Command::Query {
            source,
            mut args,
            format,
            engine,
        } => {
            let sql_arg = args.pop().expect("clap requires one argument");
            let paths: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
            let sql = runlog::query::load_sql(&sql_arg)?;
            let tables = runlog::query::tables_referenced(&sql);
            let rt = runtime()?;
            let ctx = engine_context(&engine, &source, &paths, Some(&tables), &rt)?;
            let (schema, batches) = rt.block_on(runlog::query::run_sql(&ctx, &sql))?;
            let fmt = match format {
                Format::Table => OutputFormat::Table,
                Format::Csv => OutputFormat::Csv,
                Format::Json => OutputFormat::Json,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            runlog::query::write_result(&mut out, &schema, &batches, fmt)?;
            out.flush()?;
            Ok(())
        }
        Command::Report {
            source,
            paths,
            format,
            html,
            quiet,
            engine,
        } => {
            let rt = runtime()?;
            let tables = runlog::report::tables_used();
            let ctx = engine_context(&engine, &source, &paths, Some(&tables), &rt)?;
            let report = rt.block_on(runlog::report::build(&ctx))?;
            if let Some(p) = &html {
                std::fs::write(p, runlog::html::render_html(&report))
                    .with_context(|| format!("writing {}", p.display()))?;
                eprintln!("wrote {}", p.display());
            }
            if quiet {
                return Ok(());
            }
            let text = match format {
                ReportFormat::Table => runlog::report::render_text(&report),
                ReportFormat::Json => runlog::report::render_json(&report),
                ReportFormat::Markdown => runlog::report::render_markdown(&report),
            };
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(())
        }
        Command::Replay {
            source,
            paths,
            root,
            at,
            follow,
        } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            if let Some(f) = follow {
                if f != "-" {
                    bail!("--follow reads standard input: write --follow -");
                }
                let stdin = std::io::stdin();
                runlog::replay::follow(stdin.lock(), &mut out, &mut std::io::stderr())?;
                return Ok(());
            }
            let root = root.expect("clap requires --root");
            let events = match &source.warehouse {
                Some(w) => {
                    if !paths.is_empty() {
                        bail!("give either --warehouse or log PATHs, not both");
                    }
                    runtime()?.block_on(runlog::replay::events_from_warehouse(w, &root))?
                }
                None => {
                    if paths.is_empty() {
                        bail!("give log PATHs or --warehouse DIR");
                    }
                    let loaded = load(&source.read, &paths)?;
                    loaded
                        .ingested
                        .agents
                        .into_iter()
                        .find(|a| a.root == root)
                        .map(|a| a.events)
                        .unwrap_or_default()
                }
            };
            if events.is_empty() {
                bail!("no events for root {root:?}");
            }
            let lines = match at {
                Some(at) => runlog::replay::snapshot(&root, &events, at),
                None => runlog::replay::timeline(&root, &events),
            };
            for l in lines {
                writeln!(out, "{l}")?;
            }
            out.flush()?;
            Ok(())
        }
        Command::Gen {
            agents,
            seed,
            out,
            files,
            anomalies,
            layout,
            mix,
        } => {
            if !(0.0..=1.0).contains(&anomalies) {
                bail!("--anomalies must be between 0 and 1, got {anomalies}");
            }
            if files == 0 {
                bail!("--files must be at least 1");
            }
            let opts = runlog::gen::GenOptions {
                agents,
                seed,
                files,
                anomalies,
                layout,
                mix,
            };
            let start = std::time::Instant::now();
            let stats = match &out {
                Some(p) => runlog::gen::write(&opts, p)?,
                None => {
                    if files > 1 {
                        bail!("--files {files} needs --out DIR");
                    }
                    let stdout = std::io::stdout();
                    let mut w = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
                    let s = runlog::gen::write_to(&opts, &mut w)?;
                    w.flush()?;
                    s
                }
            };
            let secs = start.elapsed().as_secs_f64();
            if out.is_some() {
                eprintln!(
                    "wrote {} agents, {} lines, {:.1} MB in {} file(s) in {:.2} s ({:.0} MB/s)\n\
                     ingest will find: kept {} + duplicates {} + rejects {}",
                    stats.agents,
                    stats.lines,
                    stats.bytes as f64 / 1e6,
                    stats.files,
                    secs,
                    stats.bytes as f64 / 1e6 / secs.max(1e-9),
                    stats.expected_kept,
                    stats.expected_duplicates,
                    stats.expected_rejects
                );
            }
            Ok(())
        }
        Command::Bench {
            paths,
            agents,
            json,
        } => {
            let scratch = tempfile_dir()?;
            let paths = if paths.is_empty() {
                let p = scratch.join("generated.jsonl");
                let opts = runlog::gen::GenOptions {
                    agents,
                    ..Default::default()
                };
                runlog::gen::write(&opts, &p)?;
                vec![p]
            } else {
                paths
            };
            let result = runlog::bench::run(&paths, &scratch);
            let _ = std::fs::remove_dir_all(&scratch);
            let result = result?;
            if json {
                println!("{}", serde_json::to_string_pretty(&result)?);
            } else {
                print!("{}", runlog::bench::render(&result));
            }
            Ok(())
        }
    }
}

/// A fresh scratch folder under the system's temporary folder.
fn tempfile_dir() -> Result<PathBuf> {
    let p = std::env::temp_dir().join(format!("runlog-bench-{}", runlog::store::new_ingest_id()));
    std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
    Ok(p)
}
