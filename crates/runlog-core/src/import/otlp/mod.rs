//! OpenTelemetry traces and logs as OTLP JSON: the files the OpenTelemetry Collector's file
//! exporter writes (one `TracesData` or `LogsData` object per line), or one OTLP JSON document
//! (on one line, or pretty-printed over many).
//!
//! This module decodes: each line is read with the `opentelemetry-proto` crate's message types
//! and their OTLP/JSON encoding (hex trace and span ids, 64-bit integers as strings or numbers,
//! enums as integers) into flat [`Span`] and [`LogRecord`] values. Spans arrive in batches, in
//! no particular order, and a parent often ends after its children, so nothing is emitted
//! before the file ends; then [`map`] turns the whole file's spans and records into canonical
//! events in time order.

mod attributes;
mod lean;
mod map;
mod proto;

pub use proto::is_proto_stream;

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogsData;
use opentelemetry_proto::tonic::trace::v1::TracesData;
use rayon::prelude::*;
use serde_json::{json, Map, Value};

use super::{FileContext, Importer};
use crate::decode::excerpt;
use crate::event::Event;
use attributes::Attrs;

/// Whether a line (trimmed) opens the first member of a pretty-printed OTLP JSON document:
/// `"resourceSpans": [` on a line of its own or after the document's `{`.
pub fn starts_document(line: &[u8]) -> bool {
    let member = match line.strip_prefix(b"{") {
        Some(rest) => super::trim_ascii(rest),
        None => line,
    };
    (member.starts_with(b"\"resourceSpans\"") || member.starts_with(b"\"resourceLogs\""))
        && member.ends_with(b"[")
}

/// Whether a line that is not JSON on its own opens a pretty-printed document: `{` alone, or
/// `{` and the first member's opening.
fn opens_document(line: &[u8]) -> bool {
    let line = super::trim_ascii(line);
    line == b"{" || (line.starts_with(b"{") && starts_document(line))
}

/// One span as read: ids in lower-case hex, times in microseconds since the epoch (0 when
/// the record has none), attributes as their JSON text.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub line: u64,
    pub trace: String,
    pub id: String,
    pub parent: String,
    pub name: String,
    pub kind: i32,
    pub start: i64,
    pub end: i64,
    /// `Status.code`: 0 unset, 1 ok, 2 error.
    pub status: i32,
    pub status_message: String,
    pub attrs: Attrs,
    pub events: Vec<SpanEvent>,
    pub links: Vec<Value>,
    /// The instrumentation scope's JSON text (`null` when none).
    pub scope: Arc<str>,
    pub resource: Arc<Attrs>,
}

/// An event recorded on a span (`exception`, `gen_ai.*` content events, …).
#[derive(Debug, Clone)]
pub(crate) struct SpanEvent {
    pub ts: i64,
    pub name: String,
    pub attrs: Attrs,
}

/// One log record as read.
#[derive(Debug, Clone)]
pub(crate) struct LogRecord {
    pub line: u64,
    pub ts: i64,
    pub trace: String,
    pub span: String,
    /// `event_name`, else the `event.name` attribute, else `log`.
    pub name: String,
    pub severity_number: i32,
    pub severity_text: String,
    pub body: Value,
    pub attrs: Attrs,
    pub scope: Arc<str>,
    pub resource: Arc<Attrs>,
}

/// The OTLP importer of one file: collects the file's spans and log records, maps them when
/// the file ends.
pub struct OtlpImporter {
    spans: Vec<Span>,
    logs: Vec<LogRecord>,
    /// Whole-object lines not decoded yet, decoded in parallel when [`BATCH_BYTES`] of them
    /// are held (or before any other line, so that spans keep the file's order).
    batch: Batch,
    /// Batch lines that did not decode: (line, reason, masked excerpt).
    rejected: Vec<(u64, String, String)>,
    /// Lines that are not JSON on their own: the parts of one pretty-printed document,
    /// parsed together when the file ends. (line of the first part, text so far)
    document: Option<(u64, Vec<u8>)>,
    /// Lines of the pretty-printed document after its first (no event of their own).
    document_lines: Vec<u64>,
    file_rel: String,
}

/// How many bytes of whole-object lines are held before they are decoded together.
const BATCH_BYTES: usize = 4 << 20;

/// Whole-object lines held for decoding: their text, one after the other, and each line's
/// number and end in it.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    lines: Vec<(u64, usize)>,
}

/// What one line decodes to.
#[derive(Default)]
struct Decoded {
    spans: Vec<Span>,
    logs: Vec<LogRecord>,
}

impl OtlpImporter {
    pub fn new(ctx: &FileContext) -> Self {
        OtlpImporter {
            spans: Vec::new(),
            logs: Vec::new(),
            batch: Batch::default(),
            rejected: Vec::new(),
            document: None,
            document_lines: Vec::new(),
            file_rel: ctx.rel.clone(),
        }
    }

    /// Reads a whole OTLP protobuf file ([`is_proto_stream`]): message k stands for line k
    /// (a file of one bare message is message 1).
    /// Returns how many messages (numbered lines) it held.
    pub fn read_proto(&mut self, bytes: &[u8]) -> u64 {
        let (decoded, count) = proto::read(bytes);
        for d in decoded {
            match d {
                Ok(d) => {
                    self.spans.extend(d.spans);
                    self.logs.extend(d.logs);
                }
                Err(rejected) => self.rejected.push(rejected),
            }
        }
        count
    }

    /// Decodes the held lines, in parallel, and takes their spans and records in the
    /// file's order.
    fn flush(&mut self) {
        if self.batch.lines.is_empty() {
            return;
        }
        let Batch { text, lines } = std::mem::take(&mut self.batch);
        let decoded: Vec<Result<Decoded, String>> = (0..lines.len())
            .into_par_iter()
            .map(|i| {
                let start = if i == 0 { 0 } else { lines[i - 1].1 };
                decode_line(lines[i].0, &text[start..lines[i].1])
            })
            .collect();
        for (i, d) in decoded.into_iter().enumerate() {
            match d {
                Ok(d) => {
                    self.spans.extend(d.spans);
                    self.logs.extend(d.logs);
                }
                Err(reason) => {
                    let start = if i == 0 { 0 } else { lines[i - 1].1 };
                    let line = &text[start..lines[i].1];
                    self.rejected.push((lines[i].0, reason, excerpt(line)));
                }
            }
        }
        self.batch.text = text;
        self.batch.text.clear();
    }
}

/// One line that is a whole JSON object: the common shapes (the Collector's file exporter,
/// `runlog collect`'s spool) decoded straight into the message types, without a JSON tree
/// first; a line of another shape, or one that does not decode so, read the general way.
fn decode_line(line_no: u64, line: &[u8]) -> Result<Decoded, String> {
    let mut out = Decoded::default();
    if line.starts_with(b"{\"resourceSpans\"") {
        if lean::read_traces(&mut out, line_no, line).is_ok() {
            return Ok(out);
        }
        out = Decoded::default();
        if let Ok(data) = serde_json::from_slice::<TracesData>(line) {
            read_traces(&mut out, line_no, data);
            return Ok(out);
        }
    } else if line.starts_with(b"{\"resourceLogs\"") {
        if let Ok(data) = serde_json::from_slice::<LogsData>(line) {
            read_logs(&mut out, line_no, data);
            return Ok(out);
        }
    }
    let v = serde_json::from_slice::<Value>(line).map_err(|e| format!("invalid JSON: {e}"))?;
    read_object(&mut out, line_no, v)?;
    Ok(out)
}

/// Reads one OTLP JSON object (`TracesData`, `LogsData` or their export requests, which
/// have the same shape).
fn read_object(out: &mut Decoded, line_no: u64, value: Value) -> Result<(), String> {
    let Value::Object(o) = value else {
        return Err("record is not a JSON object".into());
    };
    if o.contains_key("resourceSpans") {
        let data: TracesData = serde_json::from_value(Value::Object(o))
            .map_err(|e| format!("invalid OTLP TracesData: {e}"))?;
        read_traces(out, line_no, data);
        Ok(())
    } else if o.contains_key("resourceLogs") {
        let data: LogsData = serde_json::from_value(Value::Object(o))
            .map_err(|e| format!("invalid OTLP LogsData: {e}"))?;
        read_logs(out, line_no, data);
        Ok(())
    } else {
        Err("not an OTLP JSON object (no resourceSpans or resourceLogs)".into())
    }
}

fn read_traces(out: &mut Decoded, line: u64, data: TracesData) {
    for rs in data.resource_spans {
        let resource = Arc::new(resource_attrs(rs.resource.map(|r| r.attributes)));
        for ss in rs.scope_spans {
            let scope = scope_of(ss.scope);
            for s in ss.spans {
                let (status, status_message) =
                    s.status.map(|st| (st.code, st.message)).unwrap_or_default();
                out.spans.push(Span {
                    line,
                    trace: hex(&s.trace_id),
                    id: hex(&s.span_id),
                    parent: hex(&s.parent_span_id),
                    name: s.name,
                    kind: s.kind,
                    start: micros(s.start_time_unix_nano),
                    end: micros(s.end_time_unix_nano),
                    status,
                    status_message,
                    attrs: Attrs::from_map(&attrs(s.attributes)),
                    events: s
                        .events
                        .into_iter()
                        .map(|e| SpanEvent {
                            ts: micros(e.time_unix_nano),
                            name: e.name,
                            attrs: Attrs::from_map(&attrs(e.attributes)),
                        })
                        .collect(),
                    links: s
                        .links
                        .into_iter()
                        .map(|l| {
                            json!({
                                "trace_id": hex(&l.trace_id),
                                "span_id": hex(&l.span_id),
                                "attributes": attrs(l.attributes),
                            })
                        })
                        .collect(),
                    scope: scope.clone(),
                    resource: resource.clone(),
                });
            }
        }
    }
}

fn read_logs(out: &mut Decoded, line: u64, data: LogsData) {
    for rl in data.resource_logs {
        let resource = Arc::new(resource_attrs(rl.resource.map(|r| r.attributes)));
        for sl in rl.scope_logs {
            let scope = scope_of(sl.scope);
            for r in sl.log_records {
                let attrs = Attrs::from_map(&attrs(r.attributes));
                let name = if !r.event_name.is_empty() {
                    r.event_name
                } else {
                    match attrs.str("event.name") {
                        Some(n) if !n.is_empty() => n.into_owned(),
                        _ => "log".to_string(),
                    }
                };
                let ts = match micros(r.time_unix_nano) {
                    0 => micros(r.observed_time_unix_nano),
                    t => t,
                };
                out.logs.push(LogRecord {
                    line,
                    ts,
                    trace: hex(&r.trace_id),
                    span: hex(&r.span_id),
                    name,
                    severity_number: r.severity_number,
                    severity_text: r.severity_text,
                    body: r.body.map(any_to_json).unwrap_or(Value::Null),
                    attrs,
                    scope: scope.clone(),
                    resource: resource.clone(),
                });
            }
        }
    }
}

/// Whether a line is one whole JSON object of the common shapes, to be decoded with others
/// in a batch: it cannot open a pretty-printed document (that first line ends with `[`).
fn batchable(line: &[u8]) -> bool {
    (line.starts_with(b"{\"resourceSpans\"") || line.starts_with(b"{\"resourceLogs\""))
        && super::trim_ascii(line).ends_with(b"}")
}

impl Importer for OtlpImporter {
    fn line(&mut self, line_no: u64, line: &[u8], _out: &mut Vec<Event>) -> Result<(), String> {
        if let Some((_, text)) = &mut self.document {
            text.push(b'\n');
            text.extend_from_slice(line);
            self.document_lines.push(line_no);
            return Ok(());
        }
        if batchable(line) {
            self.batch.text.extend_from_slice(line);
            self.batch.lines.push((line_no, self.batch.text.len()));
            if self.batch.text.len() >= BATCH_BYTES {
                self.flush();
            }
            return Ok(());
        }
        self.flush();
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => {
                let mut out = Decoded::default();
                read_object(&mut out, line_no, v)?;
                self.spans.extend(out.spans);
                self.logs.extend(out.logs);
                Ok(())
            }
            // The first line of a pretty-printed document (`{`); its parts follow.
            Err(_) if opens_document(line) => {
                self.document = Some((line_no, line.to_vec()));
                Ok(())
            }
            Err(e) => Err(format!("invalid JSON: {e}")),
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.flush();
        if let Some((first, text)) = self.document.take() {
            let mut decoded = Decoded::default();
            let read = serde_json::from_slice::<Value>(&text)
                .map_err(|e| format!("invalid JSON: {e}"))
                .and_then(|v| read_object(&mut decoded, first, v));
            self.spans.extend(decoded.spans);
            self.logs.extend(decoded.logs);
            if let Err(reason) = read {
                // The document's lines cannot be rejected once read: the text is kept whole.
                self.logs.push(LogRecord {
                    line: first,
                    ts: 0,
                    trace: String::new(),
                    span: String::new(),
                    name: "unparsed".into(),
                    severity_number: 0,
                    severity_text: String::new(),
                    body: Value::String(String::from_utf8_lossy(&text).into_owned()),
                    attrs: Attrs::from_map(&Map::from_iter([(
                        "error".to_string(),
                        Value::String(reason),
                    )])),
                    scope: "null".into(),
                    resource: Arc::new(Attrs::default()),
                });
            }
        }
        let spans = std::mem::take(&mut self.spans);
        let logs = std::mem::take(&mut self.logs);
        map::emit(&self.file_rel, spans, logs, out);
    }

    fn folded(&mut self) -> Vec<(u64, &'static str)> {
        std::mem::take(&mut self.document_lines)
            .into_iter()
            .map(|l| (l, "otlp document"))
            .collect()
    }

    fn rejects(&mut self) -> Vec<(u64, String, String)> {
        std::mem::take(&mut self.rejected)
    }
}

/// Bytes as lower-case hex (the OTLP/JSON spelling of trace and span ids).
pub fn hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(DIGITS[(x >> 4) as usize] as char);
        s.push(DIGITS[(x & 15) as usize] as char);
    }
    s
}

/// Nanoseconds since the epoch to microseconds (0 stays 0: "not recorded").
pub(crate) fn micros(nanos: u64) -> i64 {
    i64::try_from(nanos / 1000).unwrap_or(i64::MAX)
}

/// An OTLP value as JSON: strings, booleans, integers and doubles as themselves (a double
/// that JSON cannot spell as null), arrays and key-value lists as arrays and objects, bytes
/// as hex.
pub(crate) fn any_to_json(v: AnyValue) -> Value {
    match v.value {
        None => Value::Null,
        Some(any_value::Value::StringValue(s)) => Value::String(s),
        Some(any_value::Value::BoolValue(b)) => Value::Bool(b),
        Some(any_value::Value::IntValue(i)) => Value::from(i),
        Some(any_value::Value::DoubleValue(d)) => {
            serde_json::Number::from_f64(d).map_or(Value::Null, Value::Number)
        }
        Some(any_value::Value::ArrayValue(a)) => {
            Value::Array(a.values.into_iter().map(any_to_json).collect())
        }
        Some(any_value::Value::KvlistValue(kv)) => Value::Object(attrs(kv.values)),
        Some(any_value::Value::BytesValue(b)) => Value::String(hex(&b)),
        // An index into a profile's string table: no table outside profiles.
        Some(any_value::Value::StringValueStrindex(i)) => json!({ "string_index": i }),
    }
}

fn attrs(kvs: Vec<KeyValue>) -> Map<String, Value> {
    kvs.into_iter()
        .map(|kv| (kv.key, kv.value.map(any_to_json).unwrap_or(Value::Null)))
        .collect()
}

fn resource_attrs(kvs: Option<Vec<KeyValue>>) -> Attrs {
    Attrs::from_map(&kvs.map(attrs).unwrap_or_default())
}

/// A scope's JSON text (`null` when none).
fn scope_of(
    scope: Option<opentelemetry_proto::tonic::common::v1::InstrumentationScope>,
) -> Arc<str> {
    match scope {
        None => "null".into(),
        Some(s) => scope_text(&Attrs::from_map(&attrs(s.attributes)), &s.name, &s.version).into(),
    }
}

/// The JSON text of an instrumentation scope: `{"attributes":…,"name":…,"version":…}`.
pub(crate) fn scope_text(attrs: &Attrs, name: &str, version: &str) -> String {
    let mut text = String::with_capacity(attrs.text().len() + name.len() + version.len() + 40);
    text.push_str("{\"attributes\":");
    text.push_str(attrs.text());
    text.push_str(",\"name\":");
    text.push_str(&Value::from(name).to_string());
    text.push_str(",\"version\":");
    text.push_str(&Value::from(version).to_string());
    text.push('}');
    text
}

/// The spans and log records of one export request, read from its decoded messages ahead
/// of the line it is written as: what that line's OTLP JSON reads back as, without the
/// JSON (`runlog collect` decodes a request, writes it to its spool as a line, and maps
/// it with the spool's other lines at its commit).
pub struct Ahead(Decoded);

impl Ahead {
    pub fn traces(data: TracesData) -> Ahead {
        let mut out = Decoded::default();
        read_traces(&mut out, 0, data);
        Ahead(out)
    }

    pub fn logs(data: LogsData) -> Ahead {
        let mut out = Decoded::default();
        read_logs(&mut out, 0, data);
        Ahead(out)
    }
}

impl OtlpImporter {
    /// Takes `ahead` as the line `line_no`, as [`Importer::line`] takes the line it was
    /// written as. `Err`: within a pretty-printed document, where lines are its parts.
    pub fn line_ahead(&mut self, line_no: u64, ahead: Ahead) -> Result<(), Ahead> {
        if self.document.is_some() {
            return Err(ahead);
        }
        self.flush();
        let Decoded { spans, logs } = ahead.0;
        self.spans
            .extend(spans.into_iter().map(|s| Span { line: line_no, ..s }));
        self.logs
            .extend(logs.into_iter().map(|r| LogRecord { line: line_no, ..r }));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
