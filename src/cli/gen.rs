//! `runlog gen`: a deterministic, production-like log (same arguments, same bytes).

use super::*;

#[derive(Args)]
pub struct GenArgs {
    /// Number of agents (root sessions).
    #[arg(long, default_value_t = 100)]
    pub agents: u64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file (.jsonl, .jsonl.gz, .jsonl.zst) or folder; standard output when absent.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Spread the agents over this many files (into the --out folder).
    #[arg(long, default_value_t = 1)]
    pub files: u32,
    /// Rate of anomalies: duplicates, bad lines, truncated agents, malformed turn ends.
    #[arg(long, default_value_t = 0.0)]
    pub anomalies: f64,
    /// How lines spread over the files: by-agent (each agent's lines together in one
    /// file), rotated (files are consecutive time windows, agents interleaved) or
    /// scattered (runs of an agent's lines over files, out of seq order).
    #[arg(long, default_value = "by-agent")]
    pub layout: runlog_gen::Layout,
    /// The events written: deltas (streamed logs, ~69% text/reasoning deltas) or
    /// persisted (few deltas, ~44 events per agent, as persisted session logs keep).
    #[arg(long, default_value = "deltas")]
    pub mix: runlog_gen::Mix,
}

pub fn run(args: GenArgs) -> Result<()> {
    let GenArgs {
        agents,
        seed,
        out,
        files,
        anomalies,
        layout,
        mix,
    } = args;
    if !(0.0..=1.0).contains(&anomalies) {
        bail!("--anomalies must be between 0 and 1, got {anomalies}");
    }
    if files == 0 {
        bail!("--files must be at least 1");
    }
    let opts = runlog_gen::GenOptions {
        agents,
        seed,
        files,
        anomalies,
        layout,
        mix,
    };
    let start = std::time::Instant::now();
    let stats = match &out {
        Some(p) => runlog_gen::write(&opts, p)?,
        None => {
            if files > 1 {
                bail!("--files {files} needs --out DIR");
            }
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
            let s = runlog_gen::write_to(&opts, &mut w)?;
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
