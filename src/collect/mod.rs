//! `runlog collect`: a live OTLP/HTTP receiver that fills a warehouse. OpenTelemetry
//! exporters (the agent frameworks' traces and logs) `POST /v1/traces` and `/v1/logs` to
//! it, in protobuf or JSON, gzipped or not; it answers a request 200 only once the batch
//! holding it is committed to the warehouse, so a receiver killed at any moment loses
//! nothing it acknowledged, and `runlog query|report --warehouse` read whole commits while
//! it fills.
//!
//! The parts, one job each: `http` (one request: checks, body, answers), `decode` (the
//! export request and its partial success), `lines` (a request as spool lines, and its
//! records' keys), `spool` (the durable folder of accepted requests, read again on start),
//! `batch` (when to commit, the append, the answers), this file (the threads and the
//! signals that stop them).

mod batch;
mod decode;
mod http;
mod lines;
mod spool;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

pub use batch::{FlushPolicy, Totals};
pub use decode::{Encoding, Signal};
pub use spool::SPOOL_DIR;

use batch::{Batcher, Entry};
use spool::Spool;

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
    Commit(#[from] crate::Error),
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
    let mut batcher = Batcher::new(spool, warehouse, config.flush, config.gc, config.quiet);
    // What a killed receiver had written and not committed lands first.
    batcher.start()?;
    let server = tiny_http::Server::http(&addrs[..]).map_err(|e| CollectError::Listen {
        addr: config.listen.clone(),
        message: e.to_string(),
    })?;
    let server = Arc::new(server);
    stop_on_signals(&stop)?;
    if let Some(a) = server.server_addr().to_ip() {
        ready(a);
    }
    let limits = http::Limits {
        token: config.token.clone(),
        max_body: config.max_body,
    };
    let (tx, rx) = mpsc::sync_channel::<Entry>(1024);
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get() * 2)
        .max(4);
    let handlers: Vec<_> = (0..threads)
        .map(|_| {
            let (server, tx, stop, limits) =
                (server.clone(), tx.clone(), stop.clone(), limits.clone());
            std::thread::spawn(move || serve(&server, &tx, &stop, &limits))
        })
        .collect();
    drop(tx);
    let result = batches(&mut batcher, &rx, &stop);
    // A failed batcher stops the handlers too; their requests are answered 503.
    stop.store(true, Ordering::SeqCst);
    drop(rx);
    for h in handlers {
        let _ = h.join();
    }
    // Requests that came in as the handlers stopped: not taken, to be sent again.
    while let Ok(Some(r)) = server.try_recv() {
        let msg = "the receiver is stopping; send the request again";
        http::respond(
            r,
            503,
            http::status_body(503, msg, Encoding::Json),
            Encoding::Json,
            false,
        );
    }
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
            batcher.flush()?;
        }
    }
}

/// A handler thread: reads requests until stopped; refuses or prepares each, and hands the
/// accepted ones to the batcher.
fn serve(
    server: &tiny_http::Server,
    tx: &mpsc::SyncSender<Entry>,
    stop: &AtomicBool,
    limits: &http::Limits,
) {
    while !stop.load(Ordering::SeqCst) {
        let mut request = match server.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => return,
        };
        let taken = match http::take(&mut request, limits) {
            Ok(t) => t,
            Err(r) => {
                http::refuse(request, &r);
                continue;
            }
        };
        let prepared = match lines::prepare(&taken.export) {
            Ok(p) => p,
            Err(e) => {
                let r = http::Refusal {
                    status: 400,
                    message: format!("the export cannot be written as OTLP JSON: {e}"),
                    encoding: taken.encoding,
                };
                http::refuse(request, &r);
                continue;
            }
        };
        let entry = Entry {
            request,
            taken,
            prepared,
        };
        if let Err(mpsc::SendError(e)) = tx.send(entry) {
            let msg = "the receiver is stopping; send the request again";
            http::respond(
                e.request,
                503,
                http::status_body(503, msg, e.taken.encoding),
                e.taken.encoding,
                false,
            );
            return;
        }
    }
}
