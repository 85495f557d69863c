//! `runlog collect`: a live OTLP/HTTP receiver that fills a warehouse. OpenTelemetry
//! exporters (the agent frameworks' traces and logs) `POST /v1/traces` and `/v1/logs` to
//! it, in protobuf or JSON, gzipped or not; it answers a request 200 only once the batch
//! holding it is committed to the warehouse, so a receiver killed at any moment loses
//! nothing it acknowledged, and `runlog query|report --warehouse` read whole commits while
//! it fills.
//!
//! The parts, one job each: `server` (HTTP/1.1, a thread per connection), `http` (one
//! OTLP request: checks, body, answers), `decode` (the
//! export request and its partial success), `lines` (a request as spool lines, and its
//! records' keys), `spool` (the durable folder of accepted requests, read again on start),
//! `batch` (when to commit, the commit, the answers), `gate` (how many requests are
//! decoded at once), this file (the threads and the signals that stop them).

mod batch;
mod commit;
mod decode;
mod gate;
mod groups;
mod http;
mod lines;
mod remap;
mod server;
mod spool;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;

pub use batch::{FlushPolicy, Totals};
pub use decode::{Encoding, Signal};
pub use spool::SPOOL_DIR;

use batch::{Batcher, Entry};
use spool::Spool;

/// A connection's thread hands the memory its request freed back once the request held
/// this many records ([`runlog_core::alloc::release_thread_memory`]); a small request
/// frees too little to be worth the purge.
const RELEASE_AFTER_RECORDS: u64 = 256;

/// The receiver's settings (`runlog collect`'s flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// A local warehouse folder (created when missing).
    pub warehouse: PathBuf,
    /// `HOST:PORT` to listen on (port 0: any free port).
    pub listen: String,
    pub flush: FlushPolicy,
    pub token: Option<String>,
    pub max_body: usize,
    /// What each commit's garbage collection keeps.
    pub gc: crate::commit::GcPolicy,
    /// No line per commit on stderr.
    pub quiet: bool,
}

/// Why the receiver did not start, or stopped on a failure.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(
        "--listen {0}: listening beyond loopback needs --token (every request must then \
         carry Authorization: Bearer <token>)"
    )]
    OpenWithoutToken(String),
    #[error("--listen {addr}: {message}")]
    Listen { addr: String, message: String },
    #[error(
        "--warehouse {0}: runlog collect writes to a local warehouse folder (its spool of \
         accepted requests lives inside it)"
    )]
    NotLocal(String),
    #[error(
        "--warehouse {}: it holds tables of other inputs ({other}), which the receiver's \
         commits would replace; collect into a warehouse of its own",
        warehouse.display()
    )]
    NotOwned { warehouse: PathBuf, other: String },
    #[error("another runlog collect is filling {0} (its spool is locked)")]
    Busy(PathBuf),
    #[error(transparent)]
    Spool(#[from] spool::SpoolError),
    #[error("committing the spool: {0}")]
    Commit(#[from] crate::error::Error),
}

/// The warehouse folder of `--warehouse` (a path or a `file://` URL), made absolute so
/// that the spool's files keep their names from run to run.
fn local_warehouse(w: &Path) -> Result<PathBuf, CollectError> {
    let text = w.to_string_lossy();
    let path = match text.strip_prefix("file://") {
        Some(p) => PathBuf::from(p),
        None if text.contains("://") => return Err(CollectError::NotLocal(text.into_owned())),
        None => w.to_path_buf(),
    };
    std::fs::create_dir_all(&path).map_err(|source| {
        CollectError::Spool(spool::SpoolError {
            path: path.clone(),
            source,
        })
    })?;
    path.canonicalize().map_err(|source| {
        CollectError::Spool(spool::SpoolError {
            path: path.clone(),
            source,
        })
    })
}

/// The addresses of `--listen`, refused when one is beyond loopback and no token is set.
fn listen_addrs(listen: &str, token: Option<&str>) -> Result<Vec<SocketAddr>, CollectError> {
    let addrs: Vec<SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| CollectError::Listen {
            addr: listen.to_string(),
            message: e.to_string(),
        })?
        .collect();
    if token.is_none() && addrs.iter().any(|a| !a.ip().is_loopback()) {
        return Err(CollectError::OpenWithoutToken(listen.to_string()));
    }
    Ok(addrs)
}

/// Sets `stop` on SIGTERM and SIGINT.
fn stop_on_signals(stop: &Arc<AtomicBool>) -> Result<(), CollectError> {
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(stop)).map_err(|e| CollectError::Listen {
            addr: String::new(),
            message: format!("installing the signal handlers: {e}"),
        })?;
    }
    Ok(())
}

/// Runs the receiver until SIGTERM or SIGINT (or `stop` is set): commits what the spool
/// holds from an earlier run, listens, and batches the requests into commits; on stop,
/// commits the last batch and answers it. `ready` is called with the address listened on.
pub fn run(
    config: &Config,
    stop: Arc<AtomicBool>,
    ready: impl FnOnce(SocketAddr),
) -> Result<Totals, CollectError> {
    let addrs = listen_addrs(&config.listen, config.token.as_deref())?;
    let warehouse = local_warehouse(&config.warehouse)?;
    let spool_dir = warehouse.join(SPOOL_DIR);
    let _lock = spool::lock(&spool_dir)?.ok_or_else(|| CollectError::Busy(warehouse.clone()))?;
    let spool = Spool::open(&spool_dir)?;
    let arrivals = Arc::new(gate::Arrivals::default());
    let mut batcher = Batcher::new(
        spool,
        warehouse,
        config.flush,
        config.gc,
        config.quiet,
        arrivals.clone(),
    );
    // What a killed receiver had written and not committed lands first.
    batcher.start()?;
    let listener = std::net::TcpListener::bind(&addrs[..]).map_err(|e| CollectError::Listen {
        addr: config.listen.clone(),
        message: e.to_string(),
    })?;
    stop_on_signals(&stop)?;
    if let Some(a) = server::bound(&listener) {
        ready(a);
    }
    let limits = Arc::new(http::Limits {
        token: config.token.clone(),
        max_body: config.max_body,
    });
    let gate = Arc::new(gate::Gate::per_core());
    let (tx, rx) = mpsc::sync_channel::<Entry>(1024);
    let handler = move |req: &mut server::Request| handle(req, &limits, &gate, &arrivals, &tx);
    let accept = {
        let stop = stop.clone();
        std::thread::spawn(move || server::serve(listener, stop, handler))
    };
    let result = batches(&mut batcher, &rx, &stop);
    // A failed batcher stops the connections too; their requests are answered 503.
    stop.store(true, Ordering::SeqCst);
    drop(rx);
    let _ = accept.join();
    result.map(|()| batcher.totals.clone())
}

/// The batcher's loop: takes accepted requests and commits batches until every handler has
/// stopped.
fn batches(
    batcher: &mut Batcher,
    rx: &mpsc::Receiver<Entry>,
    stop: &AtomicBool,
) -> Result<(), CollectError> {
    loop {
        match rx.recv_timeout(batcher.wait()) {
            Ok(e) => {
                batcher.take(e)?;
                while let Ok(e) = rx.try_recv() {
                    batcher.take(e)?;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                batcher.flush()?;
                return Ok(());
            }
        }
        if batcher.due(stop.load(Ordering::SeqCst)) {
            // Requests handed over while the batch became due are in it too.
            while let Ok(e) = rx.try_recv() {
                batcher.take(e)?;
            }
            batcher.flush()?;
        }
    }
}

/// One request: refused, or prepared and handed to the batcher, whose answer (after the
/// commit of its batch) is returned.
fn handle(
    req: &mut server::Request,
    limits: &http::Limits,
    gate: &gate::Gate,
    arrivals: &gate::Arrivals,
    tx: &mpsc::SyncSender<Entry>,
) -> server::Response {
    let (mut taken, permit, arrival) = match http::take(req, limits, gate, arrivals) {
        Ok(t) => t,
        Err(r) => return http::refusal(&r),
    };
    let encoding = taken.encoding;
    let export = std::mem::replace(&mut taken.export, decode::Export::empty(taken.signal));
    let prepared = match lines::prepare(export) {
        Ok(p) => p,
        Err(e) => {
            return http::refusal(&http::Refusal {
                status: 400,
                message: format!("the export cannot be written as OTLP JSON: {e}"),
                encoding,
            })
        }
    };
    drop(permit);
    if taken.records >= RELEASE_AFTER_RECORDS {
        // The request's body and decoded messages are freed; this thread now waits for the
        // commit, and must not hold their pages meanwhile.
        runlog_core::alloc::release_thread_memory();
    }
    let (reply, answer) = mpsc::channel();
    let entry = Entry {
        reply,
        taken,
        prepared,
    };
    let stopping = "the receiver is stopping; send the request again";
    if tx.send(entry).is_err() {
        return http::unavailable(stopping, encoding);
    }
    // Settled once the batcher has it: a batch due by time waits for it.
    drop(arrival);
    answer
        .recv()
        .unwrap_or_else(|_| http::unavailable(stopping, encoding))
}
