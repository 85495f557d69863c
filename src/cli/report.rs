//! `runlog report`: the headline report as text, JSON, Markdown or an HTML page.

use super::*;

#[derive(Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub source: Source,
    /// Log files and folders, or objects and prefixes in a store (s3://BUCKET/PREFIX, gs://...,
    /// az://...), unless --warehouse.
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Also write the report as a self-contained HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write DIR/index.html (the --html page, listing the notable agents) and a
    /// timeline page per notable agent under DIR/agents/.
    #[arg(long, value_name = "DIR")]
    pub html_dir: Option<PathBuf>,
    /// With --html-dir: write timeline pages for at most N notable agents.
    #[arg(long, value_name = "N", default_value_t = runlog::timeline::drill::DEFAULT_MAX_PAGES)]
    pub max_pages: usize,
    /// Print nothing on stdout (use with --html).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub window: WindowArgs,
    #[command(flatten)]
    pub baseline: baseline::BaselineArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run(args: ReportArgs) -> Result<()> {
    let ReportArgs {
        source,
        paths,
        format,
        html,
        html_dir,
        max_pages,
        quiet,
        window,
        baseline,
        engine,
    } = args;
    let window = window.window()?;
    if baseline.is_set() {
        let out = baseline::Output {
            format,
            html: html.as_deref(),
            quiet,
        };
        return baseline::run(&baseline, &source, &paths, &window, &engine, out);
    }
    let rt = runtime()?;
    // The timeline pages read more of the tables than the report's statements.
    let tables = match html_dir {
        Some(_) => runlog::plan_tables::Demand::whole(runlog::report::tables_used()),
        None => runlog::plan_tables::Demand::of(&runlog::report::statements(), &window),
    };
    let ctx = engine_context(&engine, &source, &paths, Some(&tables), &rt)?;
    let report = rt.block_on(runlog::report::build_in(&ctx, &window))?;
    if let Some(p) = &html {
        std::fs::write(p, runlog::html::render_html(&report))
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(dir) = &html_dir {
        let opts = runlog::timeline::DrillOptions { max_pages };
        let w = rt.block_on(runlog::timeline::write_html_dir(&ctx, &report, dir, &opts))?;
        eprintln!(
            "wrote {} ({} notable agents, {} timeline pages)",
            w.index.display(),
            w.notable,
            w.pages.len()
        );
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
