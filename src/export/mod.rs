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
use std::path::PathBuf;

use datafusion::prelude::SessionContext;

pub use http::{traces_url, Protocol};
pub use read::Scope;
pub use rows::Agent;
pub use sink::{Sent, Sink, DEFAULT_BATCH_SPANS};
pub use trace::Counts;

/// What can go wrong in an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Read(#[from] crate::Error),
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
/// after each agent. Returns what was written.
pub fn write_agents(
    agents: &BTreeMap<String, Agent>,
    content: bool,
    sink: &mut Sink,
    progress: &dyn Fn(&Counts),
) -> Result<Counts, ExportError> {
    let mut counts = Counts::default();
    let mut spans = Vec::new();
    for a in agents.values() {
        let c = trace::agent_spans(a, content, &mut spans);
        counts.add(&c);
        sink.push(&mut spans)?;
        progress(&counts);
    }
    Ok(counts)
}
