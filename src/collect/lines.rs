//! An accepted export request as a spool line: one OTLP JSON object (the form the OTLP
//! importer reads, `docs/importers/otlp.md`), and the key of every record, by which a
//! request sent again (an exporter's retry) adds nothing.
//!
//! The spool is one file: the importer maps each file on its own, so spans of one trace
//! that arrive in different requests, and the traces of one conversation (one root), are
//! mapped together only when they are in the same file (split over files, a conversation
//! would get a synthetic session start per file, and a trace an inferred invocation).

use std::hash::{DefaultHasher, Hash, Hasher};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogsData;
use opentelemetry_proto::tonic::trace::v1::TracesData;
use prost::Message;

use super::decode::Export;
use super::groups::key_hash;
use runlog_core::import::otlp::{hex, Ahead};

/// A record's identity: its trace and span ids (a span), or its whole encoding (a log
/// record), hashed to 128 bits.
pub type Key = u128;

/// An export request made ready for the spool.
#[derive(Default)]
pub struct Prepared {
    /// The key of every record, in order.
    pub keys: Vec<Key>,
    /// What links every record to its agent ([`links`]).
    pub links: Links,
    /// The OTLP JSON line, without its newline.
    pub line: String,
    /// What the OTLP importer reads the line as, read from the request's messages: the
    /// commit maps it without reading the line back (`None`: the commit reads the line).
    pub ahead: Option<Ahead>,
}

fn key_of(parts: &[&[u8]]) -> Key {
    let half = |seed: u8| {
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        for p in parts {
            p.hash(&mut h);
        }
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// The keys of an export's records, in order.
pub fn keys(export: &Export) -> Vec<Key> {
    match export {
        Export::Traces(req) => req
            .resource_spans
            .iter()
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans)
            .map(|s| key_of(&[&s.trace_id, &s.span_id]))
            .collect(),
        Export::Logs(req) => req
            .resource_logs
            .iter()
            .flat_map(|rl| &rl.scope_logs)
            .flat_map(|sl| &sl.log_records)
            .map(|r| key_of(&[&r.encode_to_vec()]))
            .collect(),
    }
}

/// The conversation attributes the OTLP importer takes a tree's root from.
const CONVERSATION_KEYS: [&str; 2] = ["gen_ai.conversation.id", "session.id"];

/// What links each record of a request to its agent ([`super::groups`]), in the order of
/// [`keys`]: a record's trace id (lower-case hex, as the importer spells it) and the
/// non-empty string values of its conversation attributes, each held by its hash
/// ([`super::groups::key_hash`]); none for a log record without either (its root is the
/// spool file's name). Two vectors for a whole request, not a few small strings per record:
/// a request waits in memory for its batch's commit.
#[derive(Debug, Default)]
pub struct Links {
    hashes: Vec<u64>,
    /// Where each record's hashes end in `hashes`.
    ends: Vec<u32>,
}

impl Links {
    /// Adds a record with the keys `keys`.
    pub fn push<'a>(&mut self, keys: impl IntoIterator<Item = &'a str>) {
        let start = self.hashes.len();
        for k in keys {
            let h = key_hash(k);
            if !self.hashes[start..].contains(&h) {
                self.hashes.push(h);
            }
        }
        self.ends.push(self.hashes.len() as u32);
    }

    /// Each record's key hashes, in order.
    pub fn records(&self) -> impl Iterator<Item = &[u64]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().map(|&e| e as usize));
        starts
            .zip(&self.ends)
            .map(|(s, &e)| &self.hashes[s..e as usize])
    }

    fn add(&mut self, trace: &[u8], attributes: &[KeyValue]) {
        let trace = (!trace.is_empty()).then(|| hex(trace));
        let conversations = attributes.iter().filter_map(|kv| {
            if !CONVERSATION_KEYS.contains(&kv.key.as_str()) {
                return None;
            }
            match &kv.value {
                Some(AnyValue {
                    value: Some(any_value::Value::StringValue(s)),
                }) if !s.is_empty() => Some(s.as_str()),
                _ => None,
            }
        });
        self.push(trace.as_deref().into_iter().chain(conversations));
    }
}

/// The links of an export's records.
pub fn links(export: &Export) -> Links {
    let mut links = Links::default();
    match export {
        Export::Traces(req) => req
            .resource_spans
            .iter()
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans)
            .for_each(|s| links.add(&s.trace_id, &s.attributes)),
        Export::Logs(req) => req
            .resource_logs
            .iter()
            .flat_map(|rl| &rl.scope_logs)
            .flat_map(|sl| &sl.log_records)
            .for_each(|r| links.add(&r.trace_id, &r.attributes)),
    }
    links
}

/// Keeps the records of `export` for which `keep` (called once per record, in the order of
/// [`keys`], with its key) says so.
pub fn retain(export: &mut Export, mut keep: impl FnMut(Key) -> bool) {
    match export {
        Export::Traces(req) => {
            for rs in &mut req.resource_spans {
                for ss in &mut rs.scope_spans {
                    ss.spans
                        .retain(|s| keep(key_of(&[&s.trace_id, &s.span_id])));
                }
            }
        }
        Export::Logs(req) => {
            for rl in &mut req.resource_logs {
                for sl in &mut rl.scope_logs {
                    sl.log_records
                        .retain(|r| keep(key_of(&[&r.encode_to_vec()])));
                }
            }
        }
    }
}

/// The spool line of `export`: the request as one OTLP JSON object.
pub fn line(export: &Export) -> Result<String, serde_json::Error> {
    match export {
        Export::Traces(req) => serde_json::to_string(req),
        Export::Logs(req) => serde_json::to_string(req),
    }
}

/// [`keys`], [`links`] and [`line`] of an export, and what the importer reads the line as.
pub fn prepare(export: Export) -> Result<Prepared, serde_json::Error> {
    Ok(Prepared {
        keys: keys(&export),
        links: links(&export),
        line: line(&export)?,
        ahead: Some(match export {
            Export::Traces(req) => Ahead::traces(TracesData {
                resource_spans: req.resource_spans,
            }),
            Export::Logs(req) => Ahead::logs(LogsData {
                resource_logs: req.resource_logs,
            }),
        }),
    })
}

/// The records of a spool line read back (a line that is not an export request has none).
pub fn parse_line(line: &[u8]) -> Option<Export> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    if v.get("resourceSpans").is_some() {
        serde_json::from_value(v).ok().map(Export::Traces)
    } else if v.get("resourceLogs").is_some() {
        serde_json::from_value(v).ok().map(Export::Logs)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    #[test]
    fn a_line_reads_back_to_the_same_records() {
        let spans: Vec<Span> = (0u8..20)
            .map(|i| Span {
                trace_id: vec![i; 16],
                span_id: vec![i + 1; 8],
                name: format!("s{i}"),
                ..Default::default()
            })
            .collect();
        let export = Export::Traces(ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        });
        let p = prepare(export).unwrap();
        assert_eq!(p.keys.len(), 20);
        let back = keys(&parse_line(p.line.as_bytes()).unwrap());
        assert_eq!(back, p.keys);
        let mut unique = p.keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 20);
    }
}
