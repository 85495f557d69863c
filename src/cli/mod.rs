//! The command line, one file per command: each holds its arguments (clap) and what
//! it does. This file has the commands (`Cli`, `Command`) and runs one; the arguments
//! several commands share are in `args`, and their helpers in `engine` (runtime, query
//! contexts), `progress` (progress bars), `memory` (memory policy) and `location`
//! (`file://` locations).

mod args;
mod baseline;
mod bench;
mod collect;
mod engine;
mod export;
mod gen;
mod ingest;
mod location;
pub mod memory;
mod progress;
mod query;
mod replay;
mod report;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use runlog::query::OutputFormat;

// The shared arguments and helpers, for the command files (`use super::*`).
use args::{
    parse_format, EngineArgs, EngineName, Format, ReadArgs, ReportFormat, Source, WindowArgs,
};
use engine::{engine_context, read_logs, runtime};
use memory::memory_for;
use progress::{download_progress, progress_options};
use runlog::pipeline::Tables;

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
    /// Write the turns as OpenTelemetry traces: to a file of OTLP/JSON lines, or to an
    /// OTLP/HTTP endpoint (Arize Phoenix, Jaeger, Tempo, Langfuse, a Collector).
    #[command(
        after_help = "One trace per root-session turn: invoke_agent (the turn), chat (its model \
calls),\nexecute_tool (its tool calls), nested invoke_agent spans for the subagent turns it \
spawned,\ncallback and run spans; runlog's findings as runlog.* attributes (docs/otel.md). \
Ids are\nhashes of what each span stands for: exporting twice gives the same spans.\n\
--since/--until keep the turns and run attempts that started in the window; what hangs below\n\
a kept turn (model calls, tool calls, callbacks, subagent turns) is exported whole.\n\
Example: runlog export --warehouse wh --out traces.jsonl\n\
Example: runlog export sample-logs --endpoint http://127.0.0.1:6006"
    )]
    Export(export::ExportArgs),
}

/// Runs one command.
pub fn run(mut cli: Cli) -> Result<()> {
    location::localize(&mut cli.command)?;
    match cli.command {
        Command::Ingest(a) => ingest::run(a),
        Command::Query(a) => query::run(a),
        Command::Report(a) => report::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Gen(a) => gen::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Export(a) => export::run(a),
        Command::Collect(a) => collect::run(a),
    }
}
