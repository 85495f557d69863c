//! `runlog bench`: per-stage timings and peak memory on the user's logs or a generated one.

use super::*;

#[derive(Args)]
pub struct BenchArgs {
    /// Log files and folders; without them, a log of --agents generated agents.
    pub paths: Vec<PathBuf>,
    /// Agents to generate when no PATH is given.
    #[arg(long, default_value_t = 2000)]
    pub agents: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: BenchArgs) -> Result<()> {
    let BenchArgs {
        paths,
        agents,
        json,
    } = args;
    let scratch = tempfile_dir()?;
    let paths = if paths.is_empty() {
        let p = scratch.join("generated.jsonl");
        let opts = runlog_gen::GenOptions {
            agents,
            ..Default::default()
        };
        runlog_gen::write(&opts, &p)?;
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

/// A fresh scratch folder under the system's temporary folder.
fn tempfile_dir() -> Result<PathBuf> {
    let p = std::env::temp_dir().join(format!("runlog-bench-{}", runlog::commit::new_ingest_id()));
    std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
    Ok(p)
}
