//! Where spans go, in batches: a file of OTLP/JSON lines (one `TracesData` per line, as the
//! OpenTelemetry Collector's file exporter writes), or an OTLP/HTTP endpoint (`http.rs`).
//! A batch is encoded on its own ([`encode`], so batches can be encoded in parallel), then
//! written or posted in order.

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

/// How a batch is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// A `TracesData` as one line of OTLP/JSON (with its newline).
    JsonLine,
    /// An `ExportTraceServiceRequest` as OTLP/JSON.
    Json,
    /// An `ExportTraceServiceRequest` as protobuf.
    Protobuf,
}

/// Encodes one batch of spans under runlog's resource and scope.
pub fn encode(encoding: Encoding, spans: Vec<Span>) -> Result<Vec<u8>, ExportError> {
    let resource_spans = vec![resource_spans(spans)];
    Ok(match encoding {
        Encoding::JsonLine => {
            let mut line = serde_json::to_vec(&TracesData { resource_spans })?;
            line.push(b'\n');
            line
        }
        Encoding::Json => serde_json::to_vec(&ExportTraceServiceRequest { resource_spans })?,
        Encoding::Protobuf => ExportTraceServiceRequest { resource_spans }.encode_to_vec(),
    })
}

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

/// A destination of encoded batches.
pub struct Sink {
    out: Out,
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
            batch_spans: batch_spans.max(1),
            batches: 0,
            bytes: 0,
        }
    }

    /// The number of spans a batch gathers at least (cut between agents only).
    pub fn batch_spans(&self) -> usize {
        self.batch_spans
    }

    /// How this sink's batches are encoded.
    pub fn encoding(&self) -> Encoding {
        match &self.out {
            Out::File { .. } => Encoding::JsonLine,
            Out::Http(p) => match p.protocol() {
                Protocol::Protobuf => Encoding::Protobuf,
                Protocol::Json => Encoding::Json,
            },
        }
    }

    /// Writes or posts one encoded batch.
    pub fn send(&mut self, body: &[u8]) -> Result<(), ExportError> {
        match &mut self.out {
            Out::File { path, w } => w.write_all(body).map_err(|e| ExportError::Io {
                path: path.clone(),
                source: e,
            })?,
            Out::Http(poster) => poster.post(body)?,
        }
        self.batches += 1;
        self.bytes += body.len() as u64;
        Ok(())
    }

    /// Closes the destination.
    pub fn finish(mut self) -> Result<Sent, ExportError> {
        let retries = match &mut self.out {
            Out::File { path, w } => {
                w.flush().map_err(|e| ExportError::Io {
                    path: path.clone(),
                    source: e,
                })?;
                0
            }
            Out::Http(p) => p.retries,
        };
        Ok(Sent {
            batches: self.batches,
            bytes: self.bytes,
            retries,
        })
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
