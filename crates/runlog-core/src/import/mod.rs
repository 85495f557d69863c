//! Importers: the logs real agent runtimes and providers write (docs/importers/), turned into
//! canonical events (docs/events.md) so that one reducer serves every format.
//!
//! Ingest reads every file the same way (decompression, line splitting, limits); what it
//! does with a line depends on the file's [`Format`]. The canonical format is decoded by
//! [`crate::decode`]; every other format has an [`Importer`]: a small stateful object that
//! receives the file's lines in order and pushes canonical events. Records an importer has
//! no mapping for are kept as `<source>:<raw type>` events, never dropped.
//!
//! After all files are read, [`crate::ingest`] links sessions to their roots across files
//! (a subagent's file names its parent) and, where one imported root spans several files,
//! orders its events by time and numbers them again (the sources' own counters restart per
//! file; the native one stays in `data.src_seq` where the importer keeps it).

pub mod anthropic;
pub mod claude_code;
pub mod codex;
pub mod codex_legacy;
pub mod gemini_cli;
pub mod harness;
pub mod kestrel;
pub mod openai;
pub mod opencode;
#[cfg(feature = "opencode-db")]
pub mod opencode_db;
pub mod opencode_storage;
pub mod opencode_store;
pub mod otlp;

use std::fmt;
use std::str::FromStr;

use serde_json::{json, Map, Value};

use crate::event::{Event, Kind, KindSet, PayloadIndex};

/// The format of an input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Format {
    /// Detect each file's format from its first records.
    #[default]
    Auto,
    /// The canonical envelope of docs/events.md.
    Runlog,
    /// deepseek-harness persisted logs, JSON-RPC captures and headless stream captures.
    Harness,
    /// Kestrel runner events (NDJSON or SSE).
    Kestrel,
    /// Codex CLI rollouts.
    Codex,
    /// Claude Code transcripts (with their `subagents/` files).
    ClaudeCode,
    /// Anthropic Messages SSE chunks.
    Anthropic,
    /// OpenAI Responses SSE chunks.
    Openai,
    /// Gemini CLI chats (`session-*.json` documents and `.jsonl` records).
    GeminiCli,
    /// `opencode run --format json` event streams.
    Opencode,
    /// OpenTelemetry traces and logs as OTLP JSON or protobuf (the Collector's file exporter).
    Otlp,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 11] = [
        Format::Auto,
        Format::Runlog,
        Format::Harness,
        Format::Kestrel,
        Format::Codex,
        Format::ClaudeCode,
        Format::Anthropic,
        Format::Openai,
        Format::GeminiCli,
        Format::Opencode,
        Format::Otlp,
    ];

    /// The name used on the command line and in the `source` column.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Runlog => "runlog",
            Format::Harness => "harness",
            Format::Kestrel => "kestrel",
            Format::Codex => "codex",
            Format::ClaudeCode => "claude-code",
            Format::Anthropic => "anthropic",
            Format::Openai => "openai",
            Format::GeminiCli => "gemini-cli",
            Format::Opencode => "opencode",
            Format::Otlp => "otlp",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .iter()
            .copied()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown format {s:?} (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// How many leading records `auto` may look at before it gives up.
pub const DETECT_RECORDS: usize = 16;

/// The format of one record, if that record alone tells. `None`: look at the next one.
///
/// SSE framing (`event:` / `data:` lines) is stripped before the record is examined.
pub fn detect_record(line: &[u8]) -> Option<Format> {
    let line = trim_ascii(line);
    if line.starts_with(b"event:") || line.starts_with(b":") {
        return None;
    }
    if otlp::starts_document(line) {
        return Some(Format::Otlp);
    }
    let (sse, body) = match line.strip_prefix(b"data:") {
        Some(b) => (true, trim_ascii(b)),
        None => (false, line),
    };
    let v: Value = serde_json::from_slice(body).ok()?;
    let o = v.as_object()?;
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    let ty = s("type").unwrap_or("");
    // The canonical envelope: seq, root, session, type.
    if o.contains_key("seq") && o.contains_key("root") && o.contains_key("session") && !sse {
        return Some(Format::Runlog);
    }
    if (ty == "session" && o.contains_key("version") && o.contains_key("id"))
        || ty == "session_event"
        || matches!(
            s("method"),
            Some("session.event" | "session.status" | "subagent.started" | "subagent.finished")
        )
    {
        return Some(Format::Harness);
    }
    if (ty.starts_with("run.") || ty.starts_with("runner.") || ty.starts_with("conversation."))
        && (o.contains_key("payload") || sse)
    {
        return Some(Format::Kestrel);
    }
    if ty == "session_meta" && o.contains_key("timestamp") && o.contains_key("payload") {
        return Some(Format::Codex);
    }
    if o.contains_key("sessionId") && o.contains_key("uuid") && o.contains_key("isSidechain") {
        return Some(Format::ClaudeCode);
    }
    if ty == "message_start" && o.contains_key("message") {
        return Some(Format::Anthropic);
    }
    // `response.created`, or any Responses stream event of a capture cut at the front.
    if (ty == "response.created" && o.contains_key("response"))
        || (ty.starts_with("response.") && !o.contains_key("session"))
    {
        return Some(Format::Openai);
    }
    if o.contains_key("resourceSpans") || o.contains_key("resourceLogs") {
        return Some(Format::Otlp);
    }
    if is_gemini_chat(o) {
        return Some(Format::GeminiCli);
    }
    if opencode::is_run_event(o) || opencode_storage::doc_kind(o).is_some() {
        return Some(Format::Opencode);
    }
    // An older Codex rollout: its `{id, timestamp, instructions}` header or a state line.
    if codex_legacy::is_header(o) || codex_legacy::is_state(o) {
        return Some(Format::Codex);
    }
    None
}

/// A Gemini CLI chat's metadata record (or its whole document): `sessionId` and
/// `projectHash` strings, no `type`.
fn is_gemini_chat(o: &Map<String, Value>) -> bool {
    let s = |k: &str| o.get(k).is_some_and(Value::is_string);
    s("sessionId") && s("projectHash") && !o.contains_key("type")
}

/// Whether a file whose first non-blank line is `first` is one JSON document over many
/// lines (a pretty-printed `{`): its format is then decided by [`detect_document`] on the
/// whole text.
pub fn opens_document(first: &[u8]) -> bool {
    trim_ascii(first) == b"{"
}

/// The format of a whole JSON document, if it is one an importer reads.
pub fn detect_document(text: &[u8]) -> Option<Format> {
    let v: Value = serde_json::from_slice(text).ok()?;
    let o = v.as_object()?;
    if o.contains_key("resourceSpans") || o.contains_key("resourceLogs") {
        return Some(Format::Otlp);
    }
    if opencode_storage::doc_kind(o).is_some() {
        return Some(Format::Opencode);
    }
    (is_gemini_chat(o) && o.get("messages").is_some_and(Value::is_array))
        .then_some(Format::GeminiCli)
}

/// The format of a `.json` file found in a folder, from its first bytes: `Some` when folder
/// ingest should read it (a Gemini CLI chat, OTLP JSON as the Collector's file exporter or
/// an SDK writes it, a document of OpenCode's session storage); other `.json` files are
/// skipped and counted.
pub fn sniff_json_head(head: &[u8]) -> Option<Format> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let has = |k: &[u8]| head.windows(k.len()).any(|w| w == k);
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return None;
    }
    if has(b"\"resourceSpans\"") || has(b"\"resourceLogs\"") {
        return Some(Format::Otlp);
    }
    if has(b"\"sessionId\"") && has(b"\"projectHash\"") {
        return Some(Format::GeminiCli);
    }
    opencode_storage::sniff_head(head).then_some(Format::Opencode)
}

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// The JSON record of one line of a provider stream capture: `data: {…}` gives `{…}`, a bare
/// JSON line is itself; `None` for SSE framing that carries no record (`event:`, `id:`,
/// `retry:`, `:` comments, `data: [DONE]`, an empty `data:`).
pub fn sse_payload(line: &[u8]) -> Option<&[u8]> {
    let line = trim_ascii(line);
    if let Some(body) = line.strip_prefix(b"data:") {
        let body = trim_ascii(body);
        return (!body.is_empty() && body != b"[DONE]").then_some(body);
    }
    let framing: [&[u8]; 4] = [b"event:", b"id:", b"retry:", b":"];
    if line.is_empty() || framing.iter().any(|p| line.starts_with(p)) {
        return None;
    }
    Some(line)
}

/// What an importer knows of the file it reads.
#[derive(Debug, Clone)]
pub struct FileContext {
    /// Index of the file in the ingest's file list (`Event::file`).
    pub file_idx: u32,
    /// The path as the user named it (shown in rejects and the `files` table).
    pub name: String,
    /// The path relative to the folder it was found under (for a file named on the
    /// command line: its file name). Stands in for missing and placeholder ids, so that
    /// unrelated files never merge, and finds sibling files (`session.jsonl` beside
    /// `session.1.jsonl`, `<id>.jsonl` beside `<id>/subagents/`).
    pub rel: String,
    /// The kinds of events the read keeps ([`crate::ingest::IngestOptions::keep`]; `None`:
    /// all): an importer need not write the payloads of the others ([`Payloads`]).
    pub keep: Option<KindSet>,
}

/// Which payloads an importer writes: every one, or, in a read for a question that keeps
/// only some kinds of events ([`FileContext::keep`]), the others only as a digest. Events
/// of the kinds not kept are dropped once assembled ([`crate::ingest::keep`]); until then
/// their payloads matter only where two of an agent's events meet at one `seq` (from two
/// files), and are compared to tell a duplicate (docs/semantics.md §1). A digest of the
/// payload compares as the payload does, and costs less than writing it as text (the
/// finish-reason query over real logs takes 13 % less CPU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Payloads(Option<KindSet>);

impl Payloads {
    /// The payloads a file's importer writes.
    pub fn of(ctx: &FileContext) -> Payloads {
        Payloads(ctx.keep)
    }

    /// `data`, when events of type `kind` are kept; else `{"digest": …}`, 128 bits of the
    /// payload [`event`] would write: equal payloads give equal digests.
    pub fn data(self, kind: &str, data: Value) -> Value {
        match self.0 {
            Some(keep) if !keep.contains(Kind::of(kind)) => digest(data),
            _ => data,
        }
    }
}

/// [`Payloads::data`]'s digest of `data`, as [`event`] writes it: nothing (`{}`) for no
/// payload, a value that is not an object as `{"value": …}`. Objects' members are in key
/// order (serde_json's map) and numbers are told apart as their text is (an integer from
/// a float, `-0.0` from `0.0`), so two payloads digest alike exactly when their texts are
/// alike, barring a 128-bit collision.
fn digest(data: Value) -> Value {
    let data = match data {
        Value::Object(m) if m.is_empty() => return Value::Null,
        Value::Null => return Value::Null,
        object @ Value::Object(_) => object,
        other => json!({ "value": other }),
    };
    let mut h = twox_hash::XxHash3_128::with_seed(0x7275_6e6c_6f67);
    feed(&data, &mut h);
    json!({ "digest": format!("{:032x}", h.finish_128()) })
}

/// Feeds `v` to `h`, each part tagged and each text's length first, so that no two values
/// give the same bytes.
fn feed(v: &Value, h: &mut twox_hash::XxHash3_128) {
    let text = |h: &mut twox_hash::XxHash3_128, s: &str| {
        h.write(&(s.len() as u64).to_le_bytes());
        h.write(s.as_bytes());
    };
    match v {
        Value::Null => h.write(b"n"),
        Value::Bool(b) => h.write(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                h.write(b"u");
                h.write(&u.to_le_bytes());
            } else if let Some(i) = n.as_i64() {
                h.write(b"i");
                h.write(&i.to_le_bytes());
            } else {
                h.write(b"d");
                h.write(&n.as_f64().unwrap_or_default().to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            h.write(b"s");
            text(h, s);
        }
        Value::Array(a) => {
            h.write(b"[");
            h.write(&(a.len() as u64).to_le_bytes());
            for x in a {
                feed(x, h);
            }
        }
        Value::Object(m) => {
            h.write(b"{");
            h.write(&(m.len() as u64).to_le_bytes());
            for (k, x) in m {
                text(h, k);
                feed(x, h);
            }
        }
    }
}

/// A stateful reader of one file of one source format.
pub trait Importer: Send {
    /// One non-blank line (1-based `line_no`; BOM and line end removed). Pushes the
    /// canonical events it yields. Events whose `line` is 0 are attributed to this line;
    /// `file` is always set by the caller. An `Err` is the reason the line is rejected.
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String>;

    /// End of the file: pushes what was held back (events whose `line` is 0 are attributed
    /// to the last line).
    fn finish(&mut self, out: &mut Vec<Event>);

    /// Lines that yielded no event of their own because they were folded into a named
    /// event (an Anthropic `tool_use` start and its `input_json_delta`s into the
    /// `tool/call`): `(line, that event's type)`, taken once the file is finished. Every
    /// other line yields an event, or is rejected, or is SSE framing.
    fn folded(&mut self) -> Vec<(u64, &'static str)> {
        Vec::new()
    }

    /// Lines rejected only once the file was read whole (a JSON document that does not
    /// parse): `(line, reason, masked excerpt)`, taken once the file is finished.
    fn rejects(&mut self) -> Vec<(u64, String, String)> {
        Vec::new()
    }
}

/// Test support for the importers' unit tests: a file context, and lines fed to an importer
/// the way ingest feeds them.
#[cfg(test)]
pub(crate) mod testing {
    use super::{FileContext, Importer};
    use crate::event::Event;

    /// The context of a first file called `rel` (both as named and relative).
    pub fn context(rel: &str) -> FileContext {
        FileContext {
            file_idx: 0,
            name: rel.to_string(),
            rel: rel.to_string(),
            keep: None,
        }
    }

    /// Feeds `lines` to `imp` with 1-based numbers, attributing events whose `line` is 0 to
    /// the line that yielded them (as ingest does), then finishes the file. Returns the
    /// events and the rejected lines' numbers.
    pub fn feed(imp: &mut dyn Importer, lines: &[&str]) -> (Vec<Event>, Vec<u64>) {
        let mut out = Vec::new();
        let mut rejected = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let no = i as u64 + 1;
            let before = out.len();
            if imp.line(no, l.as_bytes(), &mut out).is_err() {
                rejected.push(no);
                continue;
            }
            for ev in &mut out[before..] {
                if ev.line == 0 {
                    ev.line = no;
                }
            }
        }
        imp.finish(&mut out);
        (out, rejected)
    }
}

/// The importer of a format; `None` for the canonical format (and `Auto`).
pub fn importer(format: Format, ctx: &FileContext) -> Option<Box<dyn Importer>> {
    match format {
        Format::Auto | Format::Runlog => None,
        Format::Harness => Some(Box::new(harness::HarnessImporter::new(ctx))),
        Format::Kestrel => Some(Box::new(kestrel::KestrelImporter::new(ctx))),
        Format::Codex => Some(Box::new(codex::CodexImporter::new(ctx))),
        Format::ClaudeCode => Some(Box::new(claude_code::ClaudeCodeImporter::new(ctx))),
        Format::Anthropic => Some(Box::new(anthropic::AnthropicImporter::new(ctx))),
        Format::Openai => Some(Box::new(openai::OpenaiImporter::new(ctx))),
        Format::GeminiCli => Some(Box::new(gemini_cli::GeminiCliImporter::new(ctx))),
        Format::Opencode => Some(Box::new(opencode::OpencodeImporter::new(ctx))),
        Format::Otlp => Some(Box::new(otlp::OtlpImporter::new(ctx))),
    }
}

// ---------------------------------------------------------------------------------------
// Shared helpers for importers.

/// A canonical event. `data` must be a JSON object (`{}` when empty); `line` 0 means
/// "the line being read".
pub fn event(
    seq: u64,
    ts: i64,
    root: &str,
    session: &str,
    turn: Option<&str>,
    kind: &str,
    data: Value,
) -> Event {
    let data = match data {
        Value::Object(m) if m.is_empty() => "{}".to_string(),
        Value::Null => "{}".to_string(),
        object @ Value::Object(_) => json_text(&object),
        other => json_text(&json!({ "value": other })),
    };
    Event {
        seq,
        ts,
        root: root.into(),
        session: session.into(),
        turn: turn.map(Into::into),
        kind: kind.into(),
        index: PayloadIndex::of(kind, &data),
        data: data.into(),
        file: 0,
        line: 0,
    }
}

/// A payload's text: `v` as compact JSON, the same bytes as its `Display`, written straight
/// into a byte buffer (`Display` goes through `fmt::Formatter`: a report over real logs
/// took 7 % longer with it).
pub(crate) fn json_text(v: &Value) -> String {
    // A `Value` always serializes: its map keys are strings and its numbers finite.
    serde_json::to_string(v).unwrap_or_else(|_| v.to_string())
}

/// Whether an id is missing or a template placeholder (`{{…}}`), so the file path must
/// stand in for it.
pub fn is_placeholder(id: Option<&str>) -> bool {
    match id {
        None => true,
        Some(s) => {
            let t = s.trim();
            t.is_empty() || (t.starts_with("{{") && t.ends_with("}}"))
        }
    }
}

/// `id` unless it is missing or a placeholder, else `fallback` (the file's `rel` path).
pub fn id_or(id: Option<&str>, fallback: &str) -> String {
    if is_placeholder(id) {
        fallback.to_string()
    } else {
        id.unwrap_or_default().to_string()
    }
}

/// RFC 3339 text to microseconds since the epoch.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    crate::decode::parse_ts(s)
}

/// Synthetic timestamps for sources that record none (or 0): file start + ordinal µs.
/// Callers add `"ts_synthetic": true` to the event's data.
pub fn synthetic_ts(file_start_micros: i64, ordinal: u64) -> i64 {
    file_start_micros.saturating_add(ordinal as i64)
}

/// Sets `key: true` on an event's data object (e.g. `ts_synthetic`, `synthetic`, `inferred`).
pub fn flag(data: &mut Value, key: &str) {
    if let Value::Object(m) = data {
        m.insert(key.to_string(), Value::Bool(true));
    }
}

/// A record the importer has no mapping for: kept as `<source>:<raw type>` with the whole
/// record as its data (non-object records under `value`).
pub fn unmapped(source: Format, raw_type: &str) -> String {
    format!("{}:{}", source.name(), raw_type)
}

/// A token count as recorded: a non-negative integer, capped at 2^53 (JSON's exact integers)
/// so that the sums in [`usage_disjoint`] / [`usage_inclusive`] cannot overflow on bad input.
pub fn token_count(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64).map(|n| n.min(1 << 53))
}

/// Canonical Usage from disjoint counts (harness, Anthropic, Claude Code): input includes
/// the cache reads and writes, `cached_input_tokens` = cache reads.
pub fn usage_disjoint(input: u64, cache_read: u64, cache_write: u64, output: u64) -> Value {
    let input_all = input + cache_read + cache_write;
    json!({
        "input_tokens": input_all,
        "output_tokens": output,
        "total_tokens": input_all + output,
        "cached_input_tokens": cache_read,
        "cache_write_tokens": cache_write,
    })
}

/// Canonical Usage from inclusive counts (OpenAI, Codex): `cached` is already part of
/// `input`.
pub fn usage_inclusive(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({
        "input_tokens": input,
        "output_tokens": output,
        "total_tokens": input + output,
        "cached_input_tokens": cached,
        "reasoning_tokens": reasoning,
    })
}

/// Table E of docs/importers/: a source's raw error code to the canonical `completion_…`
/// code, `None` when unlisted (the raw code is then kept as the code).
pub fn canonical_error_code(source: Format, raw: &str) -> Option<&'static str> {
    use Format::*;
    let c = match (source, raw) {
        (Harness, "AUTH" | "INVALID_CREDENTIAL" | "MISSING_CREDENTIAL")
        | (Kestrel, "MODEL_AUTH_ERROR")
        | (Codex, "unauthorized")
        | (Anthropic | ClaudeCode, "authentication_error" | "permission_error")
        | (Openai, "invalid_api_key") => "completion_unauthorized",
        (Harness, "RATE_LIMIT")
        | (Kestrel, "MODEL_RATE_LIMITED")
        | (Anthropic | ClaudeCode, "rate_limit_error")
        | (Openai, "rate_limit_exceeded") => "completion_rate_limited",
        (Harness, "SERVER")
        | (Codex, "internal_server_error")
        | (Anthropic | ClaudeCode, "api_error" | "overloaded_error")
        | (Openai, "server_error") => "completion_unavailable",
        (Harness, "TIMEOUT") | (Kestrel, "MODEL_TIMEOUT") => "completion_timed_out",
        (Harness, "TRANSPORT" | "EMPTY_RESPONSE")
        | (Kestrel, "MODEL_NETWORK_ERROR")
        | (Codex, "response_stream_disconnected" | "http_connection_failed") => "completion_failed",
        (Harness, "CONTEXT_WINDOW_EXCEEDED")
        | (Codex, "context_window_exceeded")
        | (Openai, "context_length_exceeded") => "completion_context_too_large",
        (Harness, "QUOTA") | (Codex, "usage_limit_exceeded") | (Openai, "insufficient_quota") => {
            "completion_billing_denied"
        }
        (Harness, "INVALID_REQUEST")
        | (Kestrel, "MODEL_VALIDATION_ERROR")
        | (Codex, "bad_request")
        | (Anthropic | ClaudeCode, "invalid_request_error")
        | (Openai, "invalid_prompt") => "completion_rejected",
        (Harness, r) if r.starts_with("HTTP_4") => "completion_rejected",
        _ => return None,
    };
    Some(c)
}

/// The canonical code an HTTP status decides on its own (for a raw code table E does not
/// list): 400/404/422 rejected, 401/403 unauthorized, 408 timed out, 413 context too large,
/// 429 rate limited, 5xx (and 529) unavailable.
pub fn status_error_code(status: i64) -> Option<&'static str> {
    Some(match status {
        401 | 403 => "completion_unauthorized",
        408 => "completion_timed_out",
        413 => "completion_context_too_large",
        429 => "completion_rate_limited",
        400 | 404 | 422 => "completion_rejected",
        500..=599 => "completion_unavailable",
        _ => return None,
    })
}

/// A canonical Error object (docs/events.md) from a source's raw code: `code` by table E (the
/// raw code itself when unlisted), the raw code in `details.raw_code`, the HTTP status in
/// `details.http_status`. No recorded flag means `retryable: false`.
pub fn error_object(
    source: Format,
    raw_code: Option<&str>,
    message: &str,
    retryable: Option<bool>,
    http_status: Option<i64>,
) -> Value {
    let mut details = Map::new();
    if let Some(raw) = raw_code {
        details.insert("raw_code".into(), Value::String(raw.to_string()));
    }
    if let Some(s) = http_status {
        details.insert("http_status".into(), Value::from(s));
    }
    let code = raw_code.map(|r| canonical_error_code(source, r).unwrap_or(r).to_string());
    json!({
        "code": code,
        "message": message,
        "retryable": retryable.unwrap_or(false),
        "details": if details.is_empty() { Value::Null } else { Value::Object(details) },
    })
}

/// The fallback of an importer: every record kept as `<source>:<raw type>` (voice
/// unknown), in one session named after the file, with synthetic timestamps. Importers use
/// it for the records they have no mapping for.
pub struct Unmapped {
    pub source: Format,
    pub session: String,
    pub next_seq: u64,
}

impl Unmapped {
    pub fn new(source: Format, ctx: &FileContext) -> Self {
        Unmapped {
            source,
            session: ctx.rel.clone(),
            next_seq: 0,
        }
    }

    /// Parses a line as a JSON object (an `Err` is the reject reason).
    pub fn parse(line: &[u8]) -> Result<Map<String, Value>, String> {
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err("record is not a JSON object".to_string()),
            Err(e) => Err(format!("invalid JSON: {e}")),
        }
    }

    /// Keeps one record as an unmapped event.
    pub fn keep(&mut self, record: Map<String, Value>, out: &mut Vec<Event>) {
        let raw_type = record
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("record")
            .to_string();
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut data = Value::Object(record);
        flag(&mut data, "ts_synthetic");
        out.push(event(
            seq,
            synthetic_ts(0, seq),
            &self.session,
            &self.session,
            None,
            &unmapped(self.source, &raw_type),
            data,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload not kept digests alike with another exactly when [`event`] writes the two
    /// alike.
    #[test]
    fn digests_compare_as_written_payloads_do() {
        let payloads = [
            json!(null),
            json!({}),
            json!({ "a": 1 }),
            json!({ "a": 1.0 }),
            json!({ "a": -0.0 }),
            json!({ "a": 0.0 }),
            json!({ "a": -1 }),
            json!({ "a": "1" }),
            json!({ "a": [1, 2] }),
            json!({ "a": [[1], 2] }),
            json!({ "a": [1, [2]] }),
            json!({ "a": { "b": "c" } }),
            json!({ "ab": "c" }),
            json!({ "a": "bc" }),
            json!({ "b": 1, "a": 1 }),
            json!({ "a": 1, "b": 1 }),
            json!(5),
            json!({ "value": 5 }),
            json!("x"),
            json!({ "value": "x" }),
        ];
        let kept = Payloads(Some(KindSet::of(&[Kind::TurnEnd])));
        for a in &payloads {
            for b in &payloads {
                let written = |v: &Value| event(0, 0, "r", "r", None, "log", v.clone()).data;
                let digest = |v: &Value| {
                    event(0, 0, "r", "r", None, "log", kept.data("log", v.clone())).data
                };
                assert_eq!(
                    written(a) == written(b),
                    digest(a) == digest(b),
                    "{a} and {b}"
                );
            }
        }
        let end = json!({ "reason": { "kind": "completed" } });
        assert_eq!(kept.data("turn/end", end.clone()), end);
    }

    #[test]
    fn detects_each_format_from_a_typical_first_record() {
        let cases: [(&str, Option<Format>); 15] = [
            (
                r#"{"seq":1,"ts":"2026-01-01T00:00:00Z","root":"a","session":"a","type":"x"}"#,
                Some(Format::Runlog),
            ),
            (
                r#"{"type":"session","version":0,"id":"x","createdAt":0}"#,
                Some(Format::Harness),
            ),
            (
                r#"{"method":"session.event","params":{}}"#,
                Some(Format::Harness),
            ),
            (
                r#"{"type":"session_event","sessionId":"s","event":{}}"#,
                Some(Format::Harness),
            ),
            (
                r#"{"id":"c1","type":"run.started","ts":"2026-01-01T00:00:00Z","payload":{}}"#,
                Some(Format::Kestrel),
            ),
            (
                r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}"#,
                Some(Format::Codex),
            ),
            (
                r#"{"id":"x","timestamp":"2025-09-10T18:58:38.331Z","instructions":"a"}"#,
                Some(Format::Codex),
            ),
            (r#"{"record_type":"state"}"#, Some(Format::Codex)),
            (
                r#"{"parentUuid":null,"isSidechain":false,"sessionId":"s","uuid":"u"}"#,
                Some(Format::ClaudeCode),
            ),
            (
                r#"data: {"type":"message_start","message":{"id":"m"}}"#,
                Some(Format::Anthropic),
            ),
            (
                r#"{"type":"response.created","response":{"id":"r"}}"#,
                Some(Format::Openai),
            ),
            (
                r#"{"type":"response.output_text.delta","sequence_number":4,"delta":"Hi"}"#,
                Some(Format::Openai),
            ),
            (
                r#"{"sessionId":"s","projectHash":"h","startTime":"2026-04-02T09:00:00.000Z","kind":"main"}"#,
                Some(Format::GeminiCli),
            ),
            (
                r#"{"type":"step_start","timestamp":1777197446593,"sessionID":"ses_1","part":{"type":"step-start"}}"#,
                Some(Format::Opencode),
            ),
            (r#"{"type":"file-history-snapshot","messageId":"m"}"#, None),
        ];
        for (line, want) in cases {
            assert_eq!(detect_record(line.as_bytes()), want, "{line}");
        }
    }

    #[test]
    fn error_codes_follow_table_e_and_keep_the_raw_code() {
        let e = error_object(
            Format::Harness,
            Some("RATE_LIMIT"),
            "slow down",
            None,
            Some(429),
        );
        assert_eq!(e["code"], "completion_rate_limited");
        assert_eq!(e["details"]["raw_code"], "RATE_LIMIT");
        assert_eq!(e["details"]["http_status"], 429);
        assert_eq!(e["retryable"], false);
        let e = error_object(Format::Openai, Some("weird"), "m", Some(true), None);
        assert_eq!(e["code"], "weird");
        assert_eq!(e["retryable"], true);
        assert_eq!(
            canonical_error_code(Format::Harness, "HTTP_418"),
            Some("completion_rejected")
        );
    }

    #[test]
    fn whole_documents_and_json_files_are_told_by_content() {
        assert!(opens_document(b"  {  "));
        assert!(!opens_document(br#"{"a":1}"#));
        let doc = br#"{"sessionId":"s","projectHash":"h","messages":[]}"#;
        assert_eq!(detect_document(doc), Some(Format::GeminiCli));
        let otlp = b"{\n  \"resourceSpans\": [\n  ]\n}\n";
        assert_eq!(detect_document(otlp), Some(Format::Otlp));
        assert_eq!(sniff_json_head(otlp), Some(Format::Otlp));
        assert_eq!(sniff_json_head(b"{\"version\": 1}"), None);
        assert_eq!(detect_document(br#"{"sessionId":"s"}"#), None);
        let head = b"{\n  \"sessionId\": \"s\",\n  \"projectHash\": \"h\",\n  \"messages\": [";
        assert_eq!(sniff_json_head(head), Some(Format::GeminiCli));
        assert_eq!(
            sniff_json_head(br#"[{"sessionId":"s","messageId":0}]"#),
            None
        );
    }

    #[test]
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert!("csv".parse::<Format>().unwrap_err().contains("claude-code"));
    }
}
