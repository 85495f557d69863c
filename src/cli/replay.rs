//! `runlog replay`: one agent's timeline or its turn states as of a cursor, or a live
//! monitor of events on standard input.

use super::*;

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub source: Source,
    /// Log files and folders, or objects and prefixes in a store (s3://BUCKET/PREFIX, gs://...,
    /// az://...), unless --warehouse or --follow.
    pub paths: Vec<PathBuf>,
    /// The agent's root session id.
    #[arg(long, required_unless_present = "follow")]
    pub root: Option<String>,
    /// Show every turn's state as of this cursor (seq).
    #[arg(long, value_name = "SEQ")]
    pub at: Option<u64>,
    /// Read events from standard input ('-') and print each change at once.
    #[arg(long, value_name = "-", conflicts_with_all = ["root", "at"])]
    pub follow: Option<String>,
    /// Write the agent's timeline as one self-contained HTML page to FILE (instead of
    /// printing it as JSON lines).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["at", "follow"])]
    pub html: Option<PathBuf>,
}

pub fn run(args: ReplayArgs) -> Result<()> {
    let ReplayArgs {
        source,
        paths,
        root,
        at,
        follow,
        html,
    } = args;
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
        None => match read_logs(&source, &paths, None, Some(&root))? {
            Tables::Loaded(loaded) => loaded
                .ingested
                .agents
                .into_iter()
                .find(|a| a.root == root)
                .map(|a| a.events)
                .unwrap_or_default(),
            Tables::Stored(scratch) => {
                runtime()?.block_on(runlog::replay::events_from_warehouse(scratch.path(), &root))?
            }
            Tables::Kept(_) => bail!("a replay reads every event"),
        },
    };
    if events.is_empty() {
        bail!("no events for root {root:?}");
    }
    if let Some(p) = &html {
        let page = runlog::timeline::render_page(
            &runlog::timeline::build(&root, &events),
            &Default::default(),
        );
        std::fs::write(p, page).with_context(|| format!("writing {}", p.display()))?;
        eprintln!("wrote {}", p.display());
        return Ok(());
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
