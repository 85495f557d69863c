//! OTLP protobuf files, in two shapes:
//! - as the OpenTelemetry Collector's file exporter writes them with `format: proto`: each
//!   `ExportTraceServiceRequest` or `ExportLogsServiceRequest` (the same bytes as
//!   `TracesData` / `LogsData`) preceded by its length as a 4-byte big-endian unsigned
//!   integer. Message k (from 1) stands where line k stands in a JSON file: its spans and
//!   records carry k, and a message that does not decode is rejected as line k;
//! - one bare message, the whole file (an OTLP/HTTP request body saved as `*.pb` or
//!   `*.binpb`): message 1.

use opentelemetry_proto::tonic::logs::v1::{LogRecord, LogsData};
use opentelemetry_proto::tonic::trace::v1::{Span, TracesData};
use prost::Message;
use rayon::prelude::*;

use super::{read_logs, read_traces, Decoded};
use crate::decode::excerpt;

/// Whether a stream's first bytes are an OTLP protobuf file: [`is_framed`] or
/// [`is_unframed`].
pub fn is_proto_stream(head: &[u8]) -> bool {
    is_framed(head) || is_unframed(head)
}

/// Whether a stream's first bytes are a framed OTLP message: a length (at most 128 MiB, so
/// the first byte is a control character no text file starts with), then the message's
/// first field, `resource_spans` / `resource_logs` (field 1, length-delimited: `0x0a`).
pub fn is_framed(head: &[u8]) -> bool {
    head.len() >= 5 && head[0] < 0x08 && head[4] == 0x0a && len_at(head, 0).is_some_and(|n| n > 0)
}

/// Whether a stream's first bytes open one bare `TracesData` / `LogsData` message: its
/// first field is `resource_spans` / `resource_logs` (`0x0a`), and the first span (or log
/// record) in it, under its resource and scope, is whole in `head` and decodes as a `Span`
/// whose trace and span ids have their sizes (16 and 8 bytes), or as a `LogRecord` with a
/// time whose ids are absent or of those sizes. Strict, so that a text file (which may
/// start with a newline, `0x0a`) or another binary file is not taken.
pub fn is_unframed(head: &[u8]) -> bool {
    if head.first() != Some(&0x0a) {
        return false;
    }
    // TracesData.resource_spans → ResourceSpans.scope_spans → ScopeSpans.spans, and the
    // same field numbers for logs; only the first element need be whole.
    let Some(first) = field(head, 1, false)
        .and_then(|resource| field(resource, 2, false))
        .and_then(|scope| field(scope, 2, true))
    else {
        return false;
    };
    if let Ok(s) = Span::decode(first) {
        return s.trace_id.len() == 16
            && s.span_id.len() == 8
            && matches!(s.parent_span_id.len(), 0 | 8);
    }
    LogRecord::decode(first).is_ok_and(|r| {
        matches!(r.trace_id.len(), 0 | 16)
            && matches!(r.span_id.len(), 0 | 8)
            && (r.time_unix_nano != 0 || r.observed_time_unix_nano != 0)
    })
}

/// The bytes of the first length-delimited field `number` of a message that may be cut
/// short (what of it is in `bytes`; all of it when `whole`), the fields before it skipped;
/// `None` when a field before it is cut short or is not a protobuf field.
fn field(bytes: &[u8], number: u64, whole: bool) -> Option<&[u8]> {
    let mut at = 0;
    loop {
        let (key, n) = varint(bytes.get(at..)?)?;
        at += n;
        let len = match key & 7 {
            0 => varint(bytes.get(at..)?)?.1,
            1 => 8,
            5 => 4,
            2 => {
                let (len, n) = varint(bytes.get(at..)?)?;
                at += n;
                let len = usize::try_from(len).ok()?;
                if key >> 3 == number {
                    let end = at.checked_add(len)?;
                    return match bytes.get(at..end) {
                        Some(b) => Some(b),
                        None if !whole => bytes.get(at..),
                        None => None,
                    };
                }
                len
            }
            _ => return None,
        };
        at = at.checked_add(len)?;
        if at > bytes.len() {
            return None;
        }
    }
}

fn len_at(bytes: &[u8], at: usize) -> Option<usize> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    usize::try_from(u32::from_be_bytes(b)).ok()
}

/// A protobuf varint at the start of `bytes`: its value and how many bytes it took.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((value, i + 1));
        }
    }
    None
}

/// One message: traces, else logs (a `LogRecord`'s fields do not decode as a `Span`'s).
fn decode(k: u64, msg: &[u8]) -> Result<Decoded, String> {
    let mut out = Decoded::default();
    match TracesData::decode(msg) {
        Ok(data) => read_traces(&mut out, k, data),
        Err(traces) => match LogsData::decode(msg) {
            Ok(data) => read_logs(&mut out, k, data),
            Err(_) => return Err(format!("invalid OTLP protobuf message: {traces}")),
        },
    }
    Ok(out)
}

/// A message that was not read: its number, the reason, an excerpt.
pub(super) type Rejected = (u64, String, String);

/// The messages of a whole file ([`is_proto_stream`]): what each gave, in order, or why it
/// was rejected; and how many there were. One bare message is message 1.
pub(super) fn read(bytes: &[u8]) -> (Vec<Result<Decoded, Rejected>>, u64) {
    if bytes.first() == Some(&0x0a) {
        let one = decode(1, bytes).map_err(|reason| (1, reason, excerpt(&[])));
        return (vec![one], 1);
    }
    read_framed(bytes)
}

/// The framed messages of a whole file, decoded in parallel.
fn read_framed(bytes: &[u8]) -> (Vec<Result<Decoded, Rejected>>, u64) {
    let mut messages: Vec<(u64, &[u8])> = Vec::new();
    let mut cut = None;
    let mut at = 0;
    while at < bytes.len() {
        let k = messages.len() as u64 + 1;
        let rest = &bytes[at..];
        match len_at(bytes, at) {
            Some(n) if rest.len() - 4 >= n => {
                messages.push((k, &rest[4..4 + n]));
                at += 4 + n;
            }
            n => {
                let reason = match n {
                    Some(n) => format!(
                        "OTLP protobuf message cut short: {} of {n} bytes",
                        rest.len() - 4
                    ),
                    None => format!("OTLP protobuf length cut short: {} bytes", rest.len()),
                };
                cut = Some((k, reason, excerpt(&[])));
                break;
            }
        }
    }
    let mut out: Vec<Result<Decoded, Rejected>> = messages
        .par_iter()
        .map(|&(k, msg)| decode(k, msg).map_err(|reason| (k, reason, excerpt(&[]))))
        .collect();
    let count = messages.len() as u64 + u64::from(cut.is_some());
    out.extend(cut.map(Err));
    (out, count)
}
