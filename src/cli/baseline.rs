//! `runlog report --baseline` and `--baseline-since/--baseline-until`: the report of two
//! sides (a baseline warehouse or logs, or another window of the same data) compared, with
//! each share's shift tested (see `runlog::baseline`).

use super::*;

use runlog::query::TimeWindow;

#[derive(Args, Clone, Default)]
pub struct BaselineArgs {
    /// Compare with a baseline: a warehouse folder (one --baseline naming a folder that
    /// `runlog ingest` wrote), or log files and folders (repeat the flag: --baseline a.jsonl
    /// --baseline b.jsonl). Without it, --baseline-since/--baseline-until compare two
    /// windows of the same data.
    #[arg(long, value_name = "WAREHOUSE|PATH")]
    pub baseline: Vec<PathBuf>,
    /// The baseline's window starts at T (inclusive; RFC 3339 or a date).
    #[arg(long, value_name = "T")]
    pub baseline_since: Option<String>,
    /// The baseline's window ends before T (exclusive; RFC 3339 or a date).
    #[arg(long, value_name = "T")]
    pub baseline_until: Option<String>,
}

impl BaselineArgs {
    /// True when the report is a comparison.
    pub fn is_set(&self) -> bool {
        !self.baseline.is_empty() || self.baseline_since.is_some() || self.baseline_until.is_some()
    }
}

/// The baseline's source: one warehouse folder, or log paths (read as the current side's
/// logs are read).
fn baseline_source(paths: &[PathBuf], current: &Source) -> (Source, Vec<PathBuf>) {
    let warehouse = match paths {
        [one] if runlog::commit::is_warehouse(one) => Some(one.clone()),
        // A prefix in an object store holding a warehouse (else: logs under it).
        [one]
            if runlog::objstore::is_supported_remote(one)
                && runlog::commit::current_manifest(one).is_ok_and(|m| m.is_some()) =>
        {
            Some(one.clone())
        }
        _ => None,
    };
    let logs = if warehouse.is_some() {
        Vec::new()
    } else {
        paths.to_vec()
    };
    let source = Source {
        warehouse,
        read: current.read.clone(),
        spill_partitions: current.spill_partitions,
    };
    (source, logs)
}

/// Everything `report` renders, for the comparison.
pub struct Output<'a> {
    pub format: ReportFormat,
    pub html: Option<&'a Path>,
    pub quiet: bool,
}

/// Builds both reports, compares them and writes the comparison.
pub fn run(
    args: &BaselineArgs,
    source: &Source,
    paths: &[PathBuf],
    window: &TimeWindow,
    engine: &EngineArgs,
    out: Output,
) -> Result<()> {
    let baseline_window = TimeWindow::parse(
        args.baseline_since.as_deref(),
        args.baseline_until.as_deref(),
    )?;
    if args.baseline.is_empty() && baseline_window == *window {
        bail!(
            "the baseline is the same data in the same window: give --baseline OLD, or \
             --baseline-since/--baseline-until that differ from --since/--until"
        );
    }
    let rt = runtime()?;
    let tables = runlog::plan_tables::Demand::whole(runlog::report::tables_used());
    let local = matches!(engine.engine, EngineName::Local) && engine.scheduler.is_none();
    let (current_ctx, baseline_ctx) =
        if args.baseline.is_empty() && local && source.warehouse.is_none() {
            // Two windows of the same logs: read them once (in memory, or into one
            // temporary warehouse when large), one context per window.
            let current = engine_context(engine, source, paths, Some(&tables), &rt)?;
            let baseline = current.twin(&rt)?;
            (current, baseline)
        } else if args.baseline.is_empty() {
            (
                engine_context(engine, source, paths, Some(&tables), &rt)?,
                engine_context(engine, source, paths, Some(&tables), &rt)?,
            )
        } else {
            let current = engine_context(engine, source, paths, Some(&tables), &rt)?;
            let (bsource, bpaths) = baseline_source(&args.baseline, source);
            (
                current,
                engine_context(engine, &bsource, &bpaths, Some(&tables), &rt)?,
            )
        };
    let current = rt.block_on(runlog::report::build_in(&current_ctx, window))?;
    let baseline = rt.block_on(runlog::report::build_in(&baseline_ctx, &baseline_window))?;
    let cmp = runlog::baseline::compare(&baseline, &current);
    if let Some(p) = out.html {
        std::fs::write(p, runlog::html::render_comparison_html(&cmp))
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    if out.quiet {
        return Ok(());
    }
    let text = match out.format {
        ReportFormat::Table => runlog::baseline::render_text(&cmp),
        ReportFormat::Json => runlog::baseline::render_json(&cmp),
        ReportFormat::Markdown => runlog::baseline::render_markdown(&cmp),
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
