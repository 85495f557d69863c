//! The batches: accepted requests are written to the spool as they come; when a batch is
//! due (enough records, or the oldest waiting request has waited `--flush-secs`, or the
//! receiver is stopping) the spool is synced, ingested into the warehouse in one commit,
//! and only then is every request of the batch answered 200. A failed commit answers them
//! 503 (OTLP exporters retry; the records stay in the spool and land with the next commit).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::sync::mpsc::Sender;
use std::sync::Arc;

use super::decode::{Encoding, Signal};
use super::gate::Arrivals;
use super::http::{self, Taken};
use super::lines::Prepared;
use super::server::Response;
use super::spool::{Spool, SpoolError};
use super::CollectError;
use crate::commit::GcPolicy;
use crate::commit::Manifest;
use crate::objstore::{block_on, Root};
use runlog_core::fingerprint::Change;

/// When a batch is committed.
#[derive(Debug, Clone, Copy)]
pub struct FlushPolicy {
    /// The longest a request waits for its batch's commit to start.
    pub every: Duration,
    /// A batch of this many new records is committed at once.
    pub records: u64,
}

/// An accepted request on its way to the batcher.
pub struct Entry {
    /// Where its answer goes (the connection's thread waits on it).
    pub reply: Sender<Response>,
    pub taken: Taken,
    pub prepared: Prepared,
}

/// A request written to the spool, waiting for its batch's commit.
struct Waiting {
    reply: Sender<Response>,
    signal: Signal,
    encoding: Encoding,
    body: Vec<u8>,
}

/// What the receiver did, for its last words.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub requests: u64,
    pub spans: u64,
    pub log_records: u64,
    pub duplicates: u64,
    pub rejected: u64,
    pub commits: u64,
    pub failed_commits: u64,
}

/// The batcher: owns the spool and the requests waiting for their commit.
pub struct Batcher {
    spool: Spool,
    warehouse: PathBuf,
    policy: FlushPolicy,
    gc: GcPolicy,
    waiting: Vec<Waiting>,
    /// New records of the batch.
    records: u64,
    first_at: Option<Instant>,
    /// The requests on their way ([`super::gate::Arrivals`]).
    arrivals: Arc<Arrivals>,
    /// Once the batch is due by time: the first arrival ticket it does not wait for.
    cut: Option<u64>,
    quiet: bool,
    /// What the latest version holds, to commit the next batch on ([`super::commit`]).
    known: Option<super::commit::Known>,
    pub totals: Totals,
}

impl Batcher {
    pub fn new(
        spool: Spool,
        warehouse: PathBuf,
        policy: FlushPolicy,
        gc: GcPolicy,
        quiet: bool,
        arrivals: Arc<Arrivals>,
    ) -> Self {
        Batcher {
            spool,
            warehouse,
            policy,
            gc,
            waiting: Vec::new(),
            records: 0,
            first_at: None,
            arrivals,
            cut: None,
            quiet,
            known: None,
            totals: Totals::default(),
        }
    }

    /// Writes an accepted request's new records to the spool; it waits for the commit.
    pub fn take(&mut self, entry: Entry) -> Result<(), SpoolError> {
        let Entry {
            reply,
            taken,
            prepared,
        } = entry;
        let new = self.spool.write(prepared)?;
        self.totals.requests += 1;
        self.totals.duplicates += taken.records - new;
        self.totals.rejected += taken.rejected.count as u64;
        match taken.signal {
            Signal::Traces => self.totals.spans += new,
            Signal::Logs => self.totals.log_records += new,
        }
        self.records += new;
        self.first_at.get_or_insert_with(Instant::now);
        self.waiting.push(Waiting {
            reply,
            signal: taken.signal,
            encoding: taken.encoding,
            body: http::success_body(taken.signal, taken.encoding, &taken.rejected),
        });
        Ok(())
    }

    /// Whether the batch is due now (`stopping`: the receiver is stopping): it holds
    /// enough records, or its time is up and every request that had arrived by then
    /// (decoded or not) is in it.
    pub fn due(&mut self, stopping: bool) -> bool {
        let Some(t) = self.first_at else {
            return false;
        };
        if stopping || self.records >= self.policy.records {
            return true;
        }
        if t.elapsed() < self.policy.every {
            return false;
        }
        let cut = *self.cut.get_or_insert_with(|| self.arrivals.next());
        self.arrivals.settled_below(cut)
    }

    /// How long to wait for more requests before the batch is due.
    pub fn wait(&self) -> Duration {
        let idle = Duration::from_millis(100);
        match (self.first_at, self.cut) {
            (None, _) => idle,
            // Requests refused on their way are not handed over: look again soon.
            (Some(_), Some(_)) => Duration::from_millis(5),
            (Some(t), None) => self.policy.every.saturating_sub(t.elapsed()).min(idle),
        }
    }

    /// Commits the spool: the warehouse's tables become those an ingest of the spool file
    /// gives, in one new version. Only the agents the batch touched are mapped again and
    /// written ([`super::commit`]); the first commit of a run that cannot tell what the
    /// warehouse holds maps every line.
    pub fn commit(&mut self) -> crate::error::Result<Manifest> {
        let start = Instant::now();
        let root = Root::open(&self.warehouse)?;
        let done = super::commit::commit(&root, &mut self.spool, &mut self.known, self.gc);
        let done = match done {
            Ok(d) => d,
            Err(e) => {
                // The next commit cannot build on what this one left: it maps everything.
                self.known = None;
                return Err(e);
            }
        };
        if !self.quiet {
            let what = if self.first_at.is_some() {
                format!(
                    "{} requests, {} new records",
                    self.waiting.len(),
                    self.records
                )
            } else {
                "the spool as an earlier run left it".to_string()
            };
            eprintln!(
                "runlog collect: committed {what} ({} records in the spool; {} of {} agents \
                 written from {} of {} lines{}) in {:.2} s",
                self.spool.records(),
                done.touched,
                done.agents,
                done.lines_read,
                self.spool.lines(),
                if done.whole { ", every bucket" } else { "" },
                start.elapsed().as_secs_f64()
            );
        }
        Ok(done.manifest)
    }

    /// On start: refuses a warehouse that holds inputs other than this spool's (a commit
    /// would replace them), learns what the latest version holds, and commits what the
    /// spool holds that it has not read (what a receiver killed earlier had written).
    pub fn start(&mut self) -> Result<(), CollectError> {
        let root = Root::open(&self.warehouse)?;
        let latest = block_on(crate::commit::log::latest(&root))?;
        let dir = self.spool.dir().to_string_lossy().into_owned();
        let Some((_, m)) = latest else {
            self.commit()?;
            return Ok(());
        };
        let foreign: Vec<&String> = m.inputs.keys().filter(|k| !k.starts_with(&dir)).collect();
        let lines_of_others =
            m.inputs.is_empty() && m.summary.get("lines_read").and_then(|n| n.as_u64()) > Some(0);
        if !foreign.is_empty() || m.shards.is_some() || lines_of_others {
            return Err(CollectError::NotOwned {
                warehouse: self.warehouse.clone(),
                other: foreign.first().map_or_else(
                    || "tables not written by runlog collect".to_string(),
                    |f| f.to_string(),
                ),
            });
        }
        // Committed already when the latest version read every spool file as it is.
        let unchanged = m
            .inputs
            .iter()
            .filter(|(name, fp)| {
                fp.compare(Path::new(name))
                    .is_ok_and(|(c, _)| c == Change::Unchanged)
            })
            .count();
        let files = self.spool.files();
        if m.inputs.len() == files && unchanged == files {
            self.known = super::commit::learn(&root, &m, &mut self.spool)?;
            if self.known.is_some() {
                return Ok(());
            }
        }
        self.commit()?;
        Ok(())
    }

    /// Syncs the spool, commits it and answers the batch's requests: 200 once committed,
    /// 503 when the commit failed. A spool that cannot be synced is an error (the receiver
    /// stops: the batch's requests are answered 503).
    pub fn flush(&mut self) -> Result<(), SpoolError> {
        if self.first_at.is_none() {
            return Ok(());
        }
        let synced = self.spool.sync();
        let committed = match &synced {
            Ok(()) => self.commit().map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let waiting = std::mem::take(&mut self.waiting);
        match &committed {
            Ok(_) => self.totals.commits += 1,
            Err(e) => {
                self.totals.failed_commits += 1;
                eprintln!(
                    "runlog collect: the commit failed ({e}); its requests were answered 503"
                );
            }
        }
        for w in waiting {
            let answer = match &committed {
                Ok(_) => http::response(200, w.body, w.encoding),
                Err(e) => http::unavailable(
                    &format!(
                        "the {} were not committed to the warehouse: {e}; send them again",
                        w.signal.records()
                    ),
                    w.encoding,
                ),
            };
            // A connection gone meanwhile has no one to answer.
            let _ = w.reply.send(answer);
        }
        self.records = 0;
        self.first_at = None;
        self.cut = None;
        synced
    }
}
