//! `runlog export`: a warehouse (or logs) as OpenTelemetry traces, to a file of OTLP/JSON
//! lines or posted to an OTLP/HTTP endpoint.

use std::io::IsTerminal;

use super::engine::context;
use super::progress::bar_style;
use super::*;

use runlog::export::{self, Protocol, Scope, Sink};
use runlog::plan_tables::Demand;
use runlog_core::table::Table;

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub source: Source,
    /// Log files and folders, or objects and prefixes in a store, unless --warehouse.
    pub paths: Vec<PathBuf>,
    /// Write the traces to FILE as OTLP/JSON lines (one TracesData per line, as the
    /// OpenTelemetry Collector's file exporter writes them).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "endpoint",
        conflicts_with = "endpoint"
    )]
    pub out: Option<PathBuf>,
    /// Post the traces to this OTLP/HTTP endpoint's /v1/traces (e.g. http://127.0.0.1:4318,
    /// or Phoenix's http://127.0.0.1:6006). Plain HTTP: reach a TLS backend through a local
    /// OpenTelemetry Collector.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The wire format for --endpoint.
    #[arg(long, value_name = "PROTOCOL", default_value = "http/protobuf", value_parser = ["http/protobuf", "http/json"])]
    pub protocol: String,
    /// Only this agent (root session id).
    #[arg(long, value_name = "ID")]
    pub root: Option<String>,
    /// Include message content the tables hold: each turn's final text or output
    /// (gen_ai.output.messages, output.value) and tool-call arguments
    /// (gen_ai.tool.call.arguments). Prompts are not in the tables and are never exported.
    #[arg(long)]
    pub content: bool,
    /// The spans a batch (a line of --out, a request to --endpoint) gathers at least: batches
    /// are cut between agents, never inside one.
    #[arg(long, value_name = "N", default_value_t = export::DEFAULT_BATCH_SPANS)]
    pub batch_spans: usize,
    /// Print no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub window: WindowArgs,
}

/// The tables an export reads.
const TABLES: &[Table] = &[
    Table::Events,
    Table::Turns,
    Table::Intervals,
    Table::Errors,
    Table::ToolCalls,
    Table::Callbacks,
    Table::Runs,
    Table::Agents,
];

pub fn run(args: ExportArgs) -> Result<()> {
    let start = std::time::Instant::now();
    let window = args.window.window()?;
    if let Some(url) = &args.endpoint {
        // A bad URL is refused before the tables are read.
        export::traces_url(url)?;
    }
    let rt = runtime()?;
    let ctx = context(
        &args.source,
        &args.paths,
        Some(&Demand::whole(TABLES.to_vec())),
    )?;
    rt.block_on(runlog::query::restrict_to_window(&ctx, &window))?;
    let scope = Scope {
        windowed: !window.is_all(),
        root: args.root.clone(),
        content: args.content,
    };
    let terminal = !args.quiet && std::io::stderr().is_terminal();
    let spinner = terminal.then(|| {
        let s = indicatif::ProgressBar::new_spinner();
        s.set_message("reading the tables");
        s.enable_steady_tick(std::time::Duration::from_millis(120));
        s
    });
    let agents = rt.block_on(export::read_agents(&ctx, &scope))?;
    let read_secs = start.elapsed().as_secs_f64();
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    if let Some(r) = &args.root {
        if agents.is_empty() {
            bail!("no turns or run attempts for root {r:?}");
        }
    }
    let (mut sink, dest) = match (&args.out, &args.endpoint) {
        (Some(p), _) => (Sink::file(p, args.batch_spans)?, p.display().to_string()),
        (None, Some(url)) => {
            let protocol = match args.protocol.as_str() {
                "http/json" => Protocol::Json,
                _ => Protocol::Protobuf,
            };
            (
                Sink::endpoint(url, protocol, args.batch_spans)?,
                export::traces_url(url)?,
            )
        }
        (None, None) => bail!("give --out FILE or --endpoint URL"),
    };
    let bar = terminal.then(|| {
        let b = indicatif::ProgressBar::new(agents.len() as u64);
        b.set_style(bar_style(
            "{spinner} exporting [{bar:30}] {pos}/{len} agents {msg} eta {eta}",
        ));
        b
    });
    let progress = |c: &export::Counts, agents: u64| {
        if let Some(b) = &bar {
            b.inc(agents);
            b.set_message(format!("{} spans", c.spans()));
        }
    };
    let counts = export::write_agents(&agents, args.content, &mut sink, &progress)?;
    let export::Sent {
        batches,
        bytes,
        retries,
    } = sink.finish()?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if !args.quiet {
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "exported {} spans in {} traces to {dest}: {} turns, {} model calls, {} tool calls, \
             {} callbacks, {} run attempts; {batches} batches, {bytes} bytes, {retries} retries; \
             {secs:.2} s ({read_secs:.2} s reading the tables; {:.0} spans/s)",
            counts.spans(),
            counts.traces,
            counts.turns,
            counts.model_calls,
            counts.tool_calls,
            counts.callbacks,
            counts.runs,
            counts.spans() as f64 / secs.max(1e-9),
        );
        if counts.orphans > 0 {
            eprintln!(
                "{} model calls, tool calls or callbacks had no exported turn (outside the \
                 window, or with no turn) and were left out",
                counts.orphans
            );
        }
    }
    Ok(())
}
