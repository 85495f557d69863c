//! The body of one OTLP/HTTP export request, decoded: protobuf or OTLP/JSON by its
//! `Content-Type`, into the `opentelemetry-proto` crate's export requests; then checked
//! record by record, so that a request whose records are partly unusable is accepted for
//! the rest and answered with OTLP's partial success (the count rejected and why).

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// The two signals runlog receives: `POST /v1/traces` and `POST /v1/logs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Logs,
}

impl Signal {
    /// The signal of a request path (`None`: not an OTLP path runlog serves).
    pub fn of_path(path: &str) -> Option<Signal> {
        match path.split('?').next().unwrap_or("") {
            "/v1/traces" | "/v1/traces/" => Some(Signal::Traces),
            "/v1/logs" | "/v1/logs/" => Some(Signal::Logs),
            _ => None,
        }
    }

    /// What one record of the signal is called in messages.
    pub fn records(self) -> &'static str {
        match self {
            Signal::Traces => "spans",
            Signal::Logs => "log records",
        }
    }
}

/// The two encodings of OTLP/HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names (parameters such as `; charset=utf-8` ignored).
    pub fn of_content_type(value: &str) -> Option<Encoding> {
        let media = value.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case("application/x-protobuf") {
            Some(Encoding::Protobuf)
        } else if media.eq_ignore_ascii_case("application/json") {
            Some(Encoding::Json)
        } else {
            None
        }
    }

    /// The `Content-Type` of a response in this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// One decoded export request.
#[derive(Debug, Clone)]
pub enum Export {
    Traces(ExportTraceServiceRequest),
    Logs(ExportLogsServiceRequest),
}

impl Export {
    /// An export of `signal` without records.
    pub fn empty(signal: Signal) -> Export {
        match signal {
            Signal::Traces => Export::Traces(ExportTraceServiceRequest::default()),
            Signal::Logs => Export::Logs(ExportLogsServiceRequest::default()),
        }
    }
}

/// A body that is not an export request of its signal.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("the body is not a protobuf-encoded {what}: {source}")]
    Protobuf {
        what: &'static str,
        #[source]
        source: prost::DecodeError,
    },
    #[error("the body is not an OTLP/JSON {what}: {source}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// Decodes `body` as an export request of `signal` in `encoding`.
pub fn decode(signal: Signal, encoding: Encoding, body: &[u8]) -> Result<Export, DecodeError> {
    match (signal, encoding) {
        (Signal::Traces, Encoding::Protobuf) => ExportTraceServiceRequest::decode(body)
            .map(Export::Traces)
            .map_err(|source| DecodeError::Protobuf {
                what: "ExportTraceServiceRequest",
                source,
            }),
        (Signal::Logs, Encoding::Protobuf) => ExportLogsServiceRequest::decode(body)
            .map(Export::Logs)
            .map_err(|source| DecodeError::Protobuf {
                what: "ExportLogsServiceRequest",
                source,
            }),
        (Signal::Traces, Encoding::Json) => serde_json::from_slice(body)
            .map(Export::Traces)
            .map_err(|source| DecodeError::Json {
                what: "ExportTraceServiceRequest",
                source,
            }),
        (Signal::Logs, Encoding::Json) => {
            serde_json::from_slice(body)
                .map(Export::Logs)
                .map_err(|source| DecodeError::Json {
                    what: "ExportLogsServiceRequest",
                    source,
                })
        }
    }
}

/// What checking a request's records removed: how many, and why (the first reason).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rejected {
    pub count: i64,
    pub message: String,
}

impl Rejected {
    fn add(&mut self, why: impl FnOnce() -> String) {
        if self.count == 0 {
            self.message = why();
        }
        self.count += 1;
    }
}

/// Whether `id` is a valid trace (16 bytes) or span (8 bytes) id: of that length and not
/// all zeros, as the OTLP specification requires.
fn valid_id(id: &[u8], len: usize) -> bool {
    id.len() == len && id.iter().any(|&b| b != 0)
}

/// Removes the records runlog cannot use from `export` and says how many and why: spans
/// without a valid trace id (16 bytes, not all zeros) or span id (8 bytes), or with a
/// parent span id of another length; log records whose trace or span id, when present, has
/// the wrong length. Returns the number of records kept.
pub fn check(export: &mut Export) -> (u64, Rejected) {
    let mut rejected = Rejected::default();
    let mut kept = 0u64;
    match export {
        Export::Traces(req) => {
            for rs in &mut req.resource_spans {
                for ss in &mut rs.scope_spans {
                    ss.spans.retain(|s| {
                        let ok = valid_id(&s.trace_id, 16)
                            && valid_id(&s.span_id, 8)
                            && (s.parent_span_id.is_empty() || s.parent_span_id.len() == 8);
                        if !ok {
                            rejected.add(|| {
                                format!(
                                    "span {:?}: a span needs a 16-byte trace id and an 8-byte \
                                     span id (not all zeros), and a parent span id of 8 bytes \
                                     or none",
                                    s.name
                                )
                            });
                        }
                        kept += u64::from(ok);
                        ok
                    });
                }
            }
        }
        Export::Logs(req) => {
            for rl in &mut req.resource_logs {
                for sl in &mut rl.scope_logs {
                    sl.log_records.retain(|r| {
                        let ok = (r.trace_id.is_empty() || r.trace_id.len() == 16)
                            && (r.span_id.is_empty() || r.span_id.len() == 8);
                        if !ok {
                            rejected.add(|| {
                                "log record: a trace id must have 16 bytes and a span id 8 \
                                 (or be absent)"
                                    .to_string()
                            });
                        }
                        kept += u64::from(ok);
                        ok
                    });
                }
            }
        }
    }
    if rejected.count > 0 {
        rejected.message = format!(
            "{} {} rejected; the first: {}",
            rejected.count,
            match export {
                Export::Traces(_) => "spans",
                Export::Logs(_) => "log records",
            },
            rejected.message
        );
    }
    (kept, rejected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn span(trace: &[u8], id: &[u8]) -> Span {
        Span {
            trace_id: trace.to_vec(),
            span_id: id.to_vec(),
            name: "s".into(),
            ..Default::default()
        }
    }

    #[test]
    fn invalid_ids_are_rejected_and_the_rest_kept() {
        let mut e = Export::Traces(ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![
                        span(&[1; 16], &[2; 8]),
                        span(&[0; 16], &[2; 8]),
                        span(&[1; 16], &[2; 4]),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        });
        let (kept, rejected) = check(&mut e);
        assert_eq!(kept, 1);
        assert_eq!(rejected.count, 2);
        assert!(rejected.message.starts_with("2 spans rejected"));
    }

    #[test]
    fn content_types_and_paths() {
        assert_eq!(
            Encoding::of_content_type("application/json; charset=utf-8"),
            Some(Encoding::Json)
        );
        assert_eq!(Encoding::of_content_type("text/plain"), None);
        assert_eq!(Signal::of_path("/v1/logs"), Some(Signal::Logs));
        assert_eq!(Signal::of_path("/v1/metrics"), None);
    }

    #[test]
    fn a_truncated_protobuf_body_is_an_error() {
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans::default()],
        };
        let mut bytes = req.encode_to_vec();
        bytes.extend_from_slice(&[0x0a, 0x40, 1, 2]);
        assert!(decode(Signal::Traces, Encoding::Protobuf, &bytes).is_err());
        assert!(decode(Signal::Traces, Encoding::Json, b"{\"resourceSpans\": 3}").is_err());
    }
}
