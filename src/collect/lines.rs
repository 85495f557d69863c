//! An accepted export request as spool lines: OTLP JSON objects (the form the OTLP importer
//! reads, `docs/importers/otlp.md`), one per spool file the request has records for, and
//! the key of every record, by which a request sent again (an exporter's retry) adds
//! nothing.
//!
//! A trace's spans all go to one spool file, chosen by its trace id (a log record follows
//! the trace it names): the importer maps each file on its own, so spans of one trace that
//! arrive in different requests are mapped together, whatever the request.

use std::hash::{DefaultHasher, Hash, Hasher};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::logs::v1::{ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::Message;

use super::decode::Export;

/// The number of spool files; a trace's records are all in one of them.
pub const SPOOL_FILES: usize = 4;

/// A record's identity: its trace and span ids (a span), or its whole encoding (a log
/// record), hashed to 128 bits.
pub type Key = u128;

/// An export request made ready for the spool.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The key of every record, in order.
    pub keys: Vec<Key>,
    /// (spool file, one OTLP JSON line without its newline).
    pub lines: Vec<(usize, String)>,
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

/// The spool file of a trace id (0 for records that name no trace).
fn file_of(trace_id: &[u8]) -> usize {
    if trace_id.is_empty() {
        return 0;
    }
    let h = trace_id.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    // The high bits: the low ones of FNV depend on the bytes' low bits only.
    ((h >> 32) % SPOOL_FILES as u64) as usize
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

/// The spool lines of `export`: per spool file, the request holding only that file's
/// records (resources and scopes repeated as needed), as one OTLP JSON object.
pub fn lines(export: &Export) -> Result<Vec<(usize, String)>, serde_json::Error> {
    let mut out = Vec::new();
    match export {
        Export::Traces(req) => {
            let mut per: Vec<ExportTraceServiceRequest> = vec![Default::default(); SPOOL_FILES];
            for rs in &req.resource_spans {
                let mut scopes: Vec<Vec<ScopeSpans>> = vec![Vec::new(); SPOOL_FILES];
                for ss in &rs.scope_spans {
                    let mut spans = vec![Vec::new(); SPOOL_FILES];
                    for s in &ss.spans {
                        spans[file_of(&s.trace_id)].push(s.clone());
                    }
                    for (f, spans) in spans.into_iter().enumerate() {
                        if !spans.is_empty() {
                            scopes[f].push(ScopeSpans {
                                scope: ss.scope.clone(),
                                spans,
                                schema_url: ss.schema_url.clone(),
                            });
                        }
                    }
                }
                for (f, scope_spans) in scopes.into_iter().enumerate() {
                    if !scope_spans.is_empty() {
                        per[f].resource_spans.push(ResourceSpans {
                            resource: rs.resource.clone(),
                            scope_spans,
                            schema_url: rs.schema_url.clone(),
                        });
                    }
                }
            }
            for (f, r) in per.iter().enumerate() {
                if !r.resource_spans.is_empty() {
                    out.push((f, serde_json::to_string(r)?));
                }
            }
        }
        Export::Logs(req) => {
            let mut per: Vec<ExportLogsServiceRequest> = vec![Default::default(); SPOOL_FILES];
            for rl in &req.resource_logs {
                let mut scopes: Vec<Vec<ScopeLogs>> = vec![Vec::new(); SPOOL_FILES];
                for sl in &rl.scope_logs {
                    let mut records = vec![Vec::new(); SPOOL_FILES];
                    for r in &sl.log_records {
                        records[file_of(&r.trace_id)].push(r.clone());
                    }
                    for (f, log_records) in records.into_iter().enumerate() {
                        if !log_records.is_empty() {
                            scopes[f].push(ScopeLogs {
                                scope: sl.scope.clone(),
                                log_records,
                                schema_url: sl.schema_url.clone(),
                            });
                        }
                    }
                }
                for (f, scope_logs) in scopes.into_iter().enumerate() {
                    if !scope_logs.is_empty() {
                        per[f].resource_logs.push(ResourceLogs {
                            resource: rl.resource.clone(),
                            scope_logs,
                            schema_url: rl.schema_url.clone(),
                        });
                    }
                }
            }
            for (f, r) in per.iter().enumerate() {
                if !r.resource_logs.is_empty() {
                    out.push((f, serde_json::to_string(r)?));
                }
            }
        }
    }
    Ok(out)
}

/// [`keys`] and [`lines`] of an export.
pub fn prepare(export: &Export) -> Result<Prepared, serde_json::Error> {
    Ok(Prepared {
        keys: keys(export),
        lines: lines(export)?,
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
    use opentelemetry_proto::tonic::trace::v1::Span;

    #[test]
    fn lines_read_back_to_the_same_records() {
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
        let p = prepare(&export).unwrap();
        assert!(p.lines.len() > 1, "20 traces fall in several files");
        let mut back: Vec<Key> = p
            .lines
            .iter()
            .flat_map(|(_, l)| keys(&parse_line(l.as_bytes()).unwrap()))
            .collect();
        let mut want = p.keys.clone();
        back.sort_unstable();
        want.sort_unstable();
        assert_eq!(back, want);
    }
}
