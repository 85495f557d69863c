//! OTLP protobuf files as the OpenTelemetry Collector's file exporter writes them with
//! `format: proto`: each `ExportTraceServiceRequest` or `ExportLogsServiceRequest` (the same
//! bytes as `TracesData` / `LogsData`) preceded by its length as a 4-byte big-endian unsigned
//! integer. Message k (from 1) stands where line k stands in a JSON file: its spans and
//! records carry k, and a message that does not decode is rejected as line k.

use opentelemetry_proto::tonic::logs::v1::LogsData;
use opentelemetry_proto::tonic::trace::v1::TracesData;
use prost::Message;
use rayon::prelude::*;

use super::{read_logs, read_traces, Decoded};
use crate::decode::excerpt;

/// Whether a stream's first bytes are a framed OTLP message: a length (at most 128 MiB, so
/// the first byte is a control character no text file starts with), then the message's
/// first field, `resource_spans` / `resource_logs` (field 1, length-delimited: `0x0a`).
pub fn is_framed(head: &[u8]) -> bool {
    head.len() >= 5 && head[0] < 0x08 && head[4] == 0x0a && len_at(head, 0).is_some_and(|n| n > 0)
}

fn len_at(bytes: &[u8], at: usize) -> Option<usize> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    usize::try_from(u32::from_be_bytes(b)).ok()
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

/// The framed messages of a whole file, decoded in parallel: what each gave, in order, or
/// why it was rejected; and how many there were.
pub(super) fn read(bytes: &[u8]) -> (Vec<Result<Decoded, Rejected>>, u64) {
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
