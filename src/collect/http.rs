//! One OTLP/HTTP request, from its first line to a decoded export or a refusal: method and
//! path, the bearer token, the body's media type and compression, its size limit (before
//! and after gunzipping), and the answers OTLP/HTTP specifies (an `Export*ServiceResponse`
//! with its partial success; for a refusal, a `google.rpc.Status` with a message), in the
//! encoding of the request.

use std::io::Read;

use flate2::read::GzDecoder;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use prost::Message;

use super::server::{Request, Response};

use super::decode::{self, Encoding, Export, Rejected, Signal};
use super::gate::{Arrival, Arrivals, Gate, Permit};

/// What a request must satisfy.
#[derive(Debug, Clone)]
pub struct Limits {
    /// `--token`: the bearer token every request must carry.
    pub token: Option<String>,
    /// `--max-body`: the largest body taken, in bytes, compressed or not.
    pub max_body: usize,
}

/// A request refused, with the status and message it is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
    /// The encoding of the answer (the request's, when it named one runlog reads).
    pub encoding: Encoding,
}

/// A request taken: its export (the records runlog can use) and what it rejected.
#[derive(Debug)]
pub struct Taken {
    pub signal: Signal,
    pub encoding: Encoding,
    pub export: Export,
    /// Records kept (before duplicates of records already received are dropped).
    pub records: u64,
    pub rejected: Rejected,
}

fn header<'a>(req: &'a Request, name: &'static str) -> Option<&'a str> {
    req.header(name)
}

/// Compares two byte strings in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Reads and checks one request, decoding it with a permit of `gate` (held by the caller
/// until it has made the records its spool line); its arrival in `arrivals` once its body
/// is read (held by the caller until the batcher has it). Nothing is written for a refused
/// request.
pub fn take<'g>(
    req: &mut Request,
    limits: &Limits,
    gate: &'g Gate,
    arrivals: &'g Arrivals,
) -> Result<(Taken, Permit<'g>, Arrival<'g>), Refusal> {
    let encoding = header(req, "Content-Type").and_then(Encoding::of_content_type);
    let refuse = |status: u16, message: String| Refusal {
        status,
        message,
        encoding: encoding.unwrap_or(Encoding::Json),
    };
    if req.method != "POST" {
        return Err(refuse(
            405,
            format!("{} {}: OTLP/HTTP exports are POSTs", req.method, req.path),
        ));
    }
    let Some(signal) = Signal::of_path(&req.path) else {
        return Err(refuse(
            404,
            format!(
                "{}: runlog collect serves POST /v1/traces and POST /v1/logs",
                req.path
            ),
        ));
    };
    if let Some(token) = &limits.token {
        let given = header(req, "Authorization").and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same_secret(g.trim().as_bytes(), token.as_bytes())) {
            return Err(refuse(
                401,
                "missing or wrong Authorization: Bearer <token> (the receiver's --token)".into(),
            ));
        }
    }
    let Some(encoding) = encoding else {
        return Err(refuse(
            415,
            format!(
                "Content-Type {:?}: OTLP/HTTP bodies are application/x-protobuf or \
                 application/json",
                header(req, "Content-Type").unwrap_or("")
            ),
        ));
    };
    let gzip = match header(req, "Content-Encoding").map(str::trim) {
        None | Some("") | Some("identity") => false,
        Some(e) if e.eq_ignore_ascii_case("gzip") => true,
        Some(e) => {
            return Err(refuse(
                415,
                format!("Content-Encoding {e:?}: runlog reads gzip or uncompressed bodies"),
            ))
        }
    };
    let max = limits.max_body;
    let too_large = |what: &str| {
        refuse(
            413,
            format!("the {what} is over the receiver's limit of {max} bytes (--max-body)"),
        )
    };
    if req.length.is_some_and(|n| n > max as u64) {
        return Err(too_large("body"));
    }
    let raw = read_limited(req.body(), max)
        .map_err(|e| refuse(400, format!("reading the body: {e}")))?
        .ok_or_else(|| too_large("body"))?;
    let arrival = arrivals.arrive();
    let permit = gate.enter();
    let body = if gzip {
        read_limited(&mut GzDecoder::new(&raw[..]), max)
            .map_err(|e| refuse(400, format!("the body is not valid gzip: {e}")))?
            .ok_or_else(|| too_large("gunzipped body"))?
    } else {
        raw
    };
    let mut export =
        decode::decode(signal, encoding, &body).map_err(|e| refuse(400, e.to_string()))?;
    let (records, rejected) = decode::check(&mut export);
    let taken = Taken {
        signal,
        encoding,
        export,
        records,
        rejected,
    };
    Ok((taken, permit, arrival))
}

/// At most `max` bytes of `r` (`None`: there were more).
fn read_limited(r: &mut dyn Read, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    r.take(max as u64 + 1).read_to_end(&mut buf)?;
    Ok((buf.len() <= max).then_some(buf))
}

/// The body of a successful export's answer: the signal's `Export*ServiceResponse`, with a
/// partial success when records were rejected.
pub fn success_body(signal: Signal, encoding: Encoding, rejected: &Rejected) -> Vec<u8> {
    let partial = rejected.count > 0;
    if !partial && encoding == Encoding::Json {
        return b"{}".to_vec();
    }
    match signal {
        Signal::Traces => {
            let r = ExportTraceServiceResponse {
                partial_success: partial.then(|| ExportTracePartialSuccess {
                    rejected_spans: rejected.count,
                    error_message: rejected.message.clone(),
                }),
            };
            match encoding {
                Encoding::Protobuf => r.encode_to_vec(),
                Encoding::Json => serde_json::to_vec(&r).unwrap_or_default(),
            }
        }
        Signal::Logs => {
            let r = ExportLogsServiceResponse {
                partial_success: partial.then(|| ExportLogsPartialSuccess {
                    rejected_log_records: rejected.count,
                    error_message: rejected.message.clone(),
                }),
            };
            match encoding {
                Encoding::Protobuf => r.encode_to_vec(),
                Encoding::Json => serde_json::to_vec(&r).unwrap_or_default(),
            }
        }
    }
}

/// The gRPC status code OTLP/HTTP answers an HTTP status with.
fn rpc_code(status: u16) -> u64 {
    match status {
        400 | 415 => 3,  // INVALID_ARGUMENT
        401 => 16,       // UNAUTHENTICATED
        404 | 405 => 12, // UNIMPLEMENTED
        413 => 8,        // RESOURCE_EXHAUSTED
        503 => 14,       // UNAVAILABLE
        _ => 2,          // UNKNOWN
    }
}

/// A `google.rpc.Status` (code and message) in `encoding`.
pub fn status_body(status: u16, message: &str, encoding: Encoding) -> Vec<u8> {
    let code = rpc_code(status);
    match encoding {
        Encoding::Json => serde_json::json!({ "code": code, "message": message })
            .to_string()
            .into_bytes(),
        Encoding::Protobuf => {
            let mut out = vec![0x08];
            prost::encoding::encode_varint(code, &mut out);
            out.push(0x12);
            prost::encoding::encode_varint(message.len() as u64, &mut out);
            out.extend_from_slice(message.as_bytes());
            out
        }
    }
}

/// An answer with `status` and `body` in `encoding`.
pub fn response(status: u16, body: Vec<u8>, encoding: Encoding) -> Response {
    Response {
        status,
        content_type: encoding.content_type(),
        body,
        bearer: status == 401,
    }
}

/// The answer of a refused request.
pub fn refusal(r: &Refusal) -> Response {
    response(
        r.status,
        status_body(r.status, &r.message, r.encoding),
        r.encoding,
    )
}

/// A 503 with `message`: the exporter sends the request again.
pub fn unavailable(message: &str, encoding: Encoding) -> Response {
    response(503, status_body(503, message, encoding), encoding)
}
