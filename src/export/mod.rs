//! `runlog export`: a warehouse's turns as OpenTelemetry traces, so that the agents runlog
//! reads can be opened in tracing backends (Arize Phoenix, Jaeger, Grafana Tempo,
//! Langfuse). One trace per root-session turn: an `invoke_agent` span for the turn, `chat`
//! spans for its model calls, `execute_tool` spans for its tool calls, nested
//! `invoke_agent` spans for the subagent turns it spawned, `callback` and `run` spans, and
//! runlog's own findings as `runlog.*` attributes (docs/otel.md has the mapping).
//!
//! The stages, a file each: `read` (SQL over the tables, through `columns`, into `rows`) →
//! `trace` (trees, parents and times; `ids` makes the ids deterministic) → `spans` (one
//! OTLP span per row, its attributes built by `attrs`) → `sink` (batches to a file of
//! OTLP/JSON lines, or to an endpoint through `http`).

mod attrs;
mod columns;
mod http;
mod ids;
mod read;
mod rows;
mod sink;
mod spans;
mod trace;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use datafusion::prelude::SessionContext;
use rayon::prelude::*;

pub use http::{traces_url, Protocol};
pub use read::Scope;
pub use rows::Agent;
pub use sink::{Encoding, Sent, Sink, DEFAULT_BATCH_SPANS};
pub use trace::Counts;

/// What can go wrong in an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Read(#[from] crate::error::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("encoding spans as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("endpoint {0}")]
    Endpoint(String),
    #[error("{url} refused the spans: HTTP {status}: {body}")]
    Refused {
        url: String,
        status: u16,
        body: String,
    },
    #[error("{url}: {message}")]
    Transport { url: String, message: String },
}

/// Reads the rows of every agent `scope` selects (see [`read::read_agents`]).
pub async fn read_agents(
    ctx: &SessionContext,
    scope: &Scope,
) -> Result<BTreeMap<String, Agent>, ExportError> {
    Ok(read::read_agents(ctx, scope).await?)
}

/// Writes every agent's spans to `sink`, agent by agent in root order; `progress` is told
/// the counts so far and the agents done after each batch. Batches are built and encoded
/// in parallel, a few at a time, and sent in order, so the output is the same on any
/// number of threads.
pub fn write_agents(
    agents: &BTreeMap<String, Agent>,
    content: bool,
    sink: &mut Sink,
    progress: &dyn Fn(&Counts, u64),
) -> Result<Counts, ExportError> {
    let list: Vec<&Agent> = agents.values().collect();
    let plan = plan_batches(&list, sink.batch_spans());
    let encoding = sink.encoding();
    let wave = 2 * rayon::current_num_threads().max(1);
    let mut counts = Counts::default();
    for group in plan.chunks(wave) {
        let done: Vec<Result<Built, ExportError>> = group
            .par_iter()
            .map(|r| {
                let (mut c, mut spans) = (Counts::default(), Vec::new());
                for a in &list[r.clone()] {
                    c.add(&trace::agent_spans(a, content, &mut spans));
                }
                let body = if spans.is_empty() {
                    None
                } else {
                    Some(sink::encode(encoding, spans)?)
                };
                Ok(Built {
                    counts: c,
                    body,
                    agents: r.len(),
                })
            })
            .collect();
        for d in done {
            let b = d?;
            counts.add(&b.counts);
            if let Some(body) = &b.body {
                sink.send(body)?;
            }
            progress(&counts, b.agents as u64);
        }
    }
    Ok(counts)
}

/// One batch built: its counts, its encoded body (none without spans), its agents.
struct Built {
    counts: Counts,
    body: Option<Vec<u8>>,
    agents: usize,
}

/// Consecutive agents cut into batches of at least `batch_spans` spans (each agent's count
/// from its rows), an agent never split.
fn plan_batches(list: &[&Agent], batch_spans: usize) -> Vec<Range<usize>> {
    let mut plan = Vec::new();
    let (mut start, mut n) = (0, 0);
    for (i, a) in list.iter().enumerate() {
        n += a.turns.len() + a.models.len() + a.tools.len() + a.callbacks.len() + a.runs.len();
        if n >= batch_spans {
            plan.push(start..i + 1);
            (start, n) = (i + 1, 0);
        }
    }
    if start < list.len() {
        plan.push(start..list.len());
    }
    plan
}
