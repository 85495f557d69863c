//! `runlog collect`: the live OTLP/HTTP receiver (`runlog::collect`) that fills a
//! warehouse from OpenTelemetry exporters.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::*;

#[derive(Args)]
pub struct CollectArgs {
    /// The warehouse to fill (a local folder, created when missing). Accepted requests are
    /// kept in its `_collect/` folder (the spool) until committed, and stay there: each
    /// commit reads the spool again.
    #[arg(long, short = 'w')]
    pub warehouse: PathBuf,
    /// The address to listen on. Beyond loopback (0.0.0.0, a LAN address) --token is
    /// required. Port 0 takes any free port (the address is printed on stderr).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:4318")]
    pub listen: String,
    /// Commit a batch this many seconds after its first request arrived, with every
    /// request whose body had arrived by then (a request is answered only once its batch
    /// is committed).
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub flush_secs: f64,
    /// Commit a batch as soon as it holds this many new spans and log records.
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub flush_spans: u64,
    /// Require `Authorization: Bearer T` on every request (401 otherwise).
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// The largest request body taken, in bytes, compressed or after gunzipping (413
    /// otherwise).
    #[arg(long, value_name = "BYTES", default_value_t = 20 << 20)]
    pub max_body: usize,
    /// Garbage collection after each commit keeps every file named by one of the last K
    /// versions (every commit rewrites the tables whole, so old versions cost disk).
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_versions: u64,
    /// Garbage collection also keeps every file younger than this (90s, 30m, 1h): a query
    /// reading an older version for longer could miss rows of it. Disk holds about
    /// retention / (time between commits) copies of the tables.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = runlog::commit::log::parse_duration)]
    pub retention: std::time::Duration,
    /// No line per commit on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// How long freed memory is kept for reuse before it goes back to the OS, in milliseconds.
const COLLECT_PURGE_DELAY_MS: std::ffi::c_long = 250;

pub fn run(args: CollectArgs) -> Result<()> {
    if !(args.flush_secs.is_finite() && args.flush_secs >= 0.0) {
        bail!(
            "--flush-secs {}: a number of seconds, 0 or more",
            args.flush_secs
        );
    }
    let config = runlog::collect::Config {
        warehouse: args.warehouse,
        listen: args.listen,
        flush: runlog::collect::FlushPolicy {
            every: std::time::Duration::from_secs_f64(args.flush_secs),
            records: args.flush_spans.max(1),
        },
        token: args.token.filter(|t| !t.is_empty()),
        max_body: args.max_body,
        gc: runlog::commit::GcPolicy {
            keep_versions: args.keep_versions as usize,
            retention: args.retention,
        },
        quiet: args.quiet,
    };
    // A receiver runs for days: memory its requests and commits freed goes back to the OS
    // (a quarter of a second later: what a commit frees, its next phase takes again).
    super::memory::set_purge_delay(COLLECT_PURGE_DELAY_MS);
    let stop = Arc::new(AtomicBool::new(false));
    let warehouse = config.warehouse.display().to_string();
    let t = runlog::collect::run(&config, stop, |addr| {
        eprintln!(
            "runlog collect: listening on http://{addr} (POST /v1/traces, /v1/logs), \
             filling {warehouse}"
        );
    })?;
    eprintln!(
        "runlog collect: stopped; {} requests: {} spans and {} log records committed, {} \
         duplicates of records already received, {} rejected; {} commits ({} failed)",
        t.requests, t.spans, t.log_records, t.duplicates, t.rejected, t.commits, t.failed_commits
    );
    Ok(())
}
