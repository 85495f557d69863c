//! Where spans go, in batches: a file of OTLP/JSON lines (one `TracesData` per line, as the
//! OpenTelemetry Collector's file exporter writes), or an OTLP/HTTP endpoint (`http.rs`).
//! Spans are gathered until a batch holds at least the batch size, and cut only between
//! agents, so an agent's traces travel whole.

use std::io::Write;
use std::path::{Path, PathBuf};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, TracesData};
use prost::Message;

use super::attrs::Attrs;
use super::http::{Poster, Protocol};
use super::ExportError;

/// The default number of spans per batch (a line of the file, a request to an endpoint).
pub const DEFAULT_BATCH_SPANS: usize = 2048;

/// What a sink sent in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Batches written or posted.
    pub batches: u64,
    /// Bytes written or posted.
    pub bytes: u64,
    /// Retries an endpoint needed (0 for a file).
    pub retries: u64,
}

enum Out {
    File {
        path: PathBuf,
        w: std::io::BufWriter<std::fs::File>,
    },
    Http(Poster),
}

/// A destination of spans, with the batch being gathered.
pub struct Sink {
    out: Out,
    pending: Vec<Span>,
    batch_spans: usize,
    batches: u64,
    bytes: u64,
}

impl Sink {
    /// Spans written to `path` as OTLP/JSON lines (the file is created or truncated).
    pub fn file(path: &Path, batch_spans: usize) -> Result<Sink, ExportError> {
        let f = std::fs::File::create(path).map_err(|e| ExportError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        Ok(Sink::new(
            Out::File {
                path: path.to_path_buf(),
                w: std::io::BufWriter::with_capacity(1 << 20, f),
            },
            batch_spans,
        ))
    }

    /// Spans posted to `endpoint`'s `/v1/traces`.
    pub fn endpoint(
        endpoint: &str,
        protocol: Protocol,
        batch_spans: usize,
    ) -> Result<Sink, ExportError> {
        Ok(Sink::new(
            Out::Http(Poster::new(endpoint, protocol)?),
            batch_spans,
        ))
    }

    fn new(out: Out, batch_spans: usize) -> Sink {
        Sink {
            out,
            pending: Vec::new(),
            batch_spans: batch_spans.max(1),
            batches: 0,
            bytes: 0,
        }
    }

    /// Adds one agent's spans; sends the batch once it is full.
    pub fn push(&mut self, spans: &mut Vec<Span>) -> Result<(), ExportError> {
        self.pending.append(spans);
        if self.pending.len() >= self.batch_spans {
            self.send()?;
        }
        Ok(())
    }

    /// Sends what is gathered and closes the destination.
    pub fn finish(mut self) -> Result<Sent, ExportError> {
        if !self.pending.is_empty() {
            self.send()?;
        }
        if let Out::File { path, w } = &mut self.out {
            w.flush().map_err(|e| ExportError::Io {
                path: path.clone(),
                source: e,
            })?;
        }
        let retries = match &self.out {
            Out::Http(p) => p.retries,
            Out::File { .. } => 0,
        };
        Ok(Sent {
            batches: self.batches,
            bytes: self.bytes,
            retries,
        })
    }

    fn send(&mut self) -> Result<(), ExportError> {
        let resource_spans = vec![resource_spans(std::mem::take(&mut self.pending))];
        match &mut self.out {
            Out::File { path, w } => {
                let data = TracesData { resource_spans };
                let mut line = serde_json::to_vec(&data)?;
                line.push(b'\n');
                w.write_all(&line).map_err(|e| ExportError::Io {
                    path: path.clone(),
                    source: e,
                })?;
                self.bytes += line.len() as u64;
            }
            Out::Http(poster) => {
                let req = ExportTraceServiceRequest { resource_spans };
                let body = match poster.protocol() {
                    Protocol::Protobuf => req.encode_to_vec(),
                    Protocol::Json => serde_json::to_vec(&req)?,
                };
                poster.post(&body)?;
                self.bytes += body.len() as u64;
            }
        }
        self.batches += 1;
        Ok(())
    }
}

/// The spans under runlog's resource (`service.name = runlog`) and scope.
fn resource_spans(spans: Vec<Span>) -> ResourceSpans {
    let mut attrs = Attrs::default();
    attrs.str("service.name", "runlog");
    ResourceSpans {
        resource: Some(Resource {
            attributes: attrs.0,
            ..Default::default()
        }),
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "runlog".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                ..Default::default()
            }),
            spans,
            schema_url: String::new(),
        }],
        schema_url: String::new(),
    }
}
