//! The Kestrel importer (docs/importers/kestrel.md): reads runner event streams of Kestrel's
//! execution-protocol-v4 (events unchanged since v3), either NDJSON — one
//! `{"id","type":"run.…","ts","payload"}` envelope per line — or SSE — `event: <type>` /
//! `id: <cursor>` / `data: <json>` lines — and maps them to canonical events.
//!
//! - root = session = `sessionId` of the envelope, the payload, `payload.update` or
//!   `payload.result.output` (else the last one seen in the file, else the file's relative
//!   path); turn = `runId` (same places, else the run in progress); seq = stream order of
//!   the events this file yields (`id` is an opaque cursor); ts = `ts` (missing: epoch +
//!   line µs, `ts_synthetic`).
//! - `conversation.message.routed{messageId,disposition}` → **open** `inbox/receipt`
//!   (`queued` for a queued message, else `prompt`).
//! - `run.started` → `run.started{run_id, attempt}` (attempt = n-th start of that runId);
//!   the first start is the run's `turn/start`, a later one resumes a waiting run: it
//!   answers the run's open callback (`callback/answer`).
//! - `run.completed{result:{output,assistantText,finalizedPayload}}` → **settle**
//!   `run.completed{run_id, attempt, output}` with `assistantText`/`finalizedPayload` moved
//!   into `output`. `WAITING` → `callback/open{callback_id: waitFor.interaction.requestId,
//!   kind: waitFor.kind}`, the turn stays open; any other status → `turn/end{kind: status,
//!   text: assistantText}` + synthetic `agent/idle`.
//! - `run.failed{error{code,message,details}}` → `run.failed{error}` + `turn/end{FAILED,
//!   error}` + idle; `run.cancelled{reason?}` → `run.cancelled` + `turn/end{CANCELLED,
//!   cause: reason}` + idle. Error codes by table E, raw code in `details.raw_code`, HTTP
//!   status from `error.details.status`; `retryable` as recorded, else false.
//! - No idle while a queued message waits: each settle with queued messages pending takes
//!   one of them (the agent goes on to run it) instead of going idle.
//! - `run.model.reasoning.delta{update.delta}` → `reasoning/delta` (kept unmapped when the
//!   content was `not_retained`); `run.agent_progress{update.message}` → `progress`;
//!   `run.progress`, `run.log`, `run.console`, `runner.error` → `log{level, message}`;
//!   `run.tool.started` / `.completed` / `.failed` → `tool/call` / `tool/result{ok}` /
//!   `tool/result{error}`.
//! - Everything else is kept as `kestrel:<type>` with the whole record as data, no turn.
//!
//! SSE: ingest hands over non-blank lines only, so records are assembled statefully:
//! `event:` and `id:` lines set the pending record's type and cursor; `data:` lines are
//! joined (with `\n`, as SSE does) and the record is complete as soon as the joined data
//! parses as JSON — a one-line `data:` completes it at once, a multi-line one at its last
//! line. Data that never parses is kept unmapped (`{"raw": …}`) when the next `event:` /
//! `id:` line or the end of the file comes. The data is either a whole envelope (it has
//! `type` or `payload`) or the payload alone (its type is then the `event:` name). `:`
//! comments and `retry:` lines yield nothing.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::{
    canonical_error_code, event, flag, id_or, parse_rfc3339, synthetic_ts, FileContext, Format,
    Importer,
};
use crate::event::Event;
use crate::import::Payloads;

#[derive(Default)]
struct SessionState {
    /// How many times each run has started.
    starts: HashMap<String, i64>,
    /// The run in progress (between its start and its settle).
    current_run: Option<String>,
    /// The callback a waiting run opened, by run id.
    open_callback: HashMap<String, String>,
    /// Queued messages not yet taken up by a settle.
    queued: u32,
}

#[derive(Default)]
struct Sse {
    event: Option<String>,
    id: Option<String>,
    data: String,
    /// Line of the first `data:` line of the pending record.
    data_line: u64,
}

pub struct KestrelImporter {
    payloads: Payloads,
    rel: String,
    next_seq: u64,
    last_session: Option<String>,
    sessions: HashMap<String, SessionState>,
    sse: Sse,
}

/// The current record's place: its line, time, and whether the time is synthetic.
#[derive(Clone, Copy)]
struct At {
    line: u64,
    ts: i64,
    syn: bool,
}

fn obj(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn str_of<'a>(m: Option<&'a Map<String, Value>>, k: &str) -> Option<&'a str> {
    m.and_then(|m| m.get(k)).and_then(Value::as_str)
}

impl KestrelImporter {
    pub fn new(ctx: &FileContext) -> Self {
        KestrelImporter {
            payloads: Payloads::of(ctx),
            rel: ctx.rel.clone(),
            next_seq: 0,
            last_session: None,
            sessions: HashMap::new(),
            sse: Sse::default(),
        }
    }

    fn push(
        &mut self,
        out: &mut Vec<Event>,
        at: At,
        session: &str,
        turn: Option<&str>,
        kind: &str,
        mut data: Value,
    ) {
        if at.syn {
            flag(&mut data, "ts_synthetic");
        }
        let data = self.payloads.data(kind, data);
        let mut ev = event(self.next_seq, at.ts, session, session, turn, kind, data);
        ev.line = at.line;
        self.next_seq += 1;
        out.push(ev);
    }

    fn keep_unmapped(&mut self, out: &mut Vec<Event>, at: At, ty: &str, data: Value) {
        let session = self
            .last_session
            .clone()
            .unwrap_or_else(|| self.rel.clone());
        let kind = super::unmapped(Format::Kestrel, ty);
        self.push(out, at, &session, None, &kind, data);
    }

    /// The pending SSE data that never parsed: kept as it was written.
    fn flush_sse(&mut self, out: &mut Vec<Event>) {
        if self.sse.data.is_empty() {
            return;
        }
        let sse = std::mem::take(&mut self.sse);
        let at = At {
            line: sse.data_line,
            ts: synthetic_ts(0, sse.data_line),
            syn: true,
        };
        let ty = sse.event.unwrap_or_else(|| "sse".to_string());
        self.keep_unmapped(out, at, &ty, json!({ "raw": sse.data, "id": sse.id }));
    }

    /// One complete record: an envelope, or (SSE) a payload whose type is `sse_type`.
    fn record(
        &mut self,
        out: &mut Vec<Event>,
        line: u64,
        mut rec: Map<String, Value>,
        sse_type: Option<String>,
        sse_id: Option<String>,
    ) {
        if !rec.contains_key("type") && !rec.contains_key("payload") {
            rec = sse_envelope(rec, sse_type.clone(), sse_id);
        }
        let ty = str_of(Some(&rec), "type")
            .map(str::to_string)
            .or(sse_type)
            .unwrap_or_else(|| "record".to_string());
        let parsed = str_of(Some(&rec), "ts").and_then(parse_rfc3339);
        let at = At {
            line,
            ts: parsed.unwrap_or_else(|| synthetic_ts(0, line)),
            syn: parsed.is_none(),
        };
        let payload = obj(rec.get("payload"));
        let update = obj(payload.and_then(|p| p.get("update")));
        let output = obj(payload
            .and_then(|p| p.get("result"))
            .and_then(|r| r.get("output")));
        let places = [Some(&rec), payload, update, output];
        let find = |k: &str| {
            places
                .iter()
                .find_map(|m| str_of(*m, k).map(str::to_string))
        };
        let session = match find("sessionId") {
            Some(s) => id_or(Some(&s), &self.rel),
            None => self
                .last_session
                .clone()
                .unwrap_or_else(|| self.rel.clone()),
        };
        self.last_session = Some(session.clone());
        let explicit_run = find("runId");
        let st = self.sessions.entry(session.clone()).or_default();
        let run = explicit_run.or_else(|| st.current_run.clone());
        let attempt = run
            .as_ref()
            .and_then(|r| st.starts.get(r).copied())
            .unwrap_or(1);
        let turn = run.as_deref();
        let upd = |k: &str| str_of(update, k);

        match ty.as_str() {
            "conversation.message.routed" => {
                let queued = str_of(payload, "disposition") == Some("queued");
                if queued {
                    st.queued += 1;
                }
                let message_id = str_of(payload, "messageId")
                    .map(str::to_string)
                    .or_else(|| str_of(Some(&rec), "id").map(str::to_string))
                    .unwrap_or_else(|| format!("{}:{}", self.rel, line));
                let mut data = json!({
                    "message_id": message_id,
                    "kind": if queued { "queued" } else { "prompt" },
                });
                if let Some(d) = payload.and_then(|p| p.get("disposition")) {
                    data["disposition"] = d.clone();
                }
                self.push(out, at, &session, None, "inbox/receipt", data);
            }
            "run.started" if run.is_some() => {
                let run_id = run.unwrap_or_default();
                let n = st.starts.entry(run_id.clone()).or_insert(0);
                *n += 1;
                let n = *n;
                st.current_run = Some(run_id.clone());
                let answered = if n > 1 {
                    st.open_callback.remove(&run_id)
                } else {
                    None
                };
                if n == 1 {
                    self.push(out, at, &session, Some(&run_id), "turn/start", json!({}));
                }
                let data = json!({ "run_id": run_id, "attempt": n });
                self.push(out, at, &session, Some(&run_id), "run.started", data);
                if let Some(cb) = answered {
                    let data = json!({ "callback_id": cb });
                    self.push(out, at, &session, Some(&run_id), "callback/answer", data);
                }
            }
            "run.completed" | "run.failed" | "run.cancelled" if run.is_some() => {
                let run_id = run.unwrap_or_default();
                if st.current_run.as_deref() == Some(run_id.as_str()) {
                    st.current_run = None;
                }
                let payload = rec.remove("payload");
                self.settle(out, at, &session, &ty, &run_id, attempt, payload);
            }
            "run.model.reasoning.delta"
                if upd("contentState") != Some("not_retained") && upd("delta").is_some() =>
            {
                let data = json!({ "text": upd("delta") });
                self.push(out, at, &session, turn, "reasoning/delta", data);
            }
            "run.agent_progress" if upd("message").is_some() => {
                let data = json!({ "text": upd("message") });
                self.push(out, at, &session, turn, "progress", data);
            }
            "run.progress" | "run.log" | "run.console" | "runner.error" => {
                let data = log_data(&ty, payload);
                self.push(out, at, &session, turn, "log", data);
            }
            "run.tool.started" | "run.tool.completed" | "run.tool.failed"
                if upd("toolCallId").is_some() =>
            {
                let (kind, data) = tool_event(&ty, update);
                self.push(out, at, &session, turn, kind, data);
            }
            _ => {
                let kind = super::unmapped(Format::Kestrel, &ty);
                self.push(out, at, &session, None, &kind, Value::Object(rec));
            }
        }
    }

    /// `run.completed` / `run.failed` / `run.cancelled`: the settling event, then the turn's
    /// end (or, for a waiting run, its callback) and the idle.
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &mut self,
        out: &mut Vec<Event>,
        at: At,
        session: &str,
        ty: &str,
        run_id: &str,
        attempt: i64,
        payload: Option<Value>,
    ) {
        let mut payload = match payload {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let mut result = match payload.remove("result") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let text = result
            .get("assistantText")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut reason = Map::new();
        let mut waiting = None;
        match ty {
            "run.completed" => {
                let mut output = match result.remove("output") {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                for k in ["assistantText", "finalizedPayload"] {
                    if let Some(v) = result.remove(k) {
                        output.insert(k.to_string(), v);
                    }
                }
                let status = output.get("status").cloned().unwrap_or(Value::Null);
                if status.as_str() == Some("WAITING") {
                    let wait = obj(output.get("waitFor"));
                    let interaction = obj(wait.and_then(|w| w.get("interaction")))
                        .or_else(|| obj(output.get("interaction")));
                    let id = str_of(interaction, "requestId")
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{run_id}:{attempt}:wait"));
                    let kind = str_of(wait, "kind")
                        .or_else(|| str_of(interaction, "kind"))
                        .unwrap_or("wait");
                    let mut cb = json!({ "callback_id": id, "kind": kind });
                    if let Some(p) = str_of(interaction, "prompt") {
                        cb["title"] = Value::String(p.to_string());
                    }
                    if let Some(i) = interaction {
                        cb["request"] = Value::Object(i.clone());
                    }
                    waiting = Some((id, cb));
                }
                reason.insert("kind".into(), status);
                let data = json!({ "run_id": run_id, "attempt": attempt, "output": output });
                self.push(out, at, session, Some(run_id), "run.completed", data);
            }
            "run.failed" => {
                let error = kestrel_error(payload.get("error"));
                reason.insert("kind".into(), Value::String("FAILED".into()));
                reason.insert("error".into(), error.clone());
                let data = json!({ "run_id": run_id, "attempt": attempt, "error": error });
                self.push(out, at, session, Some(run_id), "run.failed", data);
            }
            _ => {
                reason.insert("kind".into(), Value::String("CANCELLED".into()));
                let mut data = json!({ "run_id": run_id, "attempt": attempt });
                if let Some(r) = payload.get("reason").and_then(Value::as_str) {
                    reason.insert("cause".into(), Value::String(r.to_string()));
                    data["reason"] = Value::String(r.to_string());
                }
                self.push(out, at, session, Some(run_id), "run.cancelled", data);
            }
        }
        let st = self.sessions.entry(session.to_string()).or_default();
        if let Some((id, cb)) = waiting {
            st.open_callback.insert(run_id.to_string(), id);
            self.push(out, at, session, Some(run_id), "callback/open", cb);
            return;
        }
        st.open_callback.remove(run_id);
        let idle = if st.queued > 0 {
            st.queued -= 1;
            false
        } else {
            true
        };
        let mut data = json!({ "reason": reason });
        if let Some(t) = text {
            data["text"] = Value::String(t);
        }
        self.push(out, at, session, Some(run_id), "turn/end", data);
        if idle {
            let mut data = json!({});
            flag(&mut data, "synthetic");
            self.push(out, at, session, None, "agent/idle", data);
        }
    }
}

/// A Kestrel error (`{code, message, details{status,…}, retryable?}`) as a canonical Error:
/// code by table E, raw code in `details.raw_code`, `details.status` as `http_status`, the
/// other details kept.
fn kestrel_error(e: Option<&Value>) -> Value {
    let e = obj(e);
    let raw = str_of(e, "code");
    let message = str_of(e, "message").unwrap_or("");
    let retryable = e
        .and_then(|e| e.get("retryable"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut details = obj(e.and_then(|e| e.get("details")))
        .cloned()
        .unwrap_or_default();
    if let Some(s) = details.get("status").and_then(Value::as_i64) {
        details.insert("http_status".into(), Value::from(s));
    }
    if let Some(r) = raw {
        details.insert("raw_code".into(), Value::String(r.to_string()));
    }
    let code = raw.map(|r| canonical_error_code(Format::Kestrel, r).unwrap_or(r));
    json!({
        "code": code,
        "message": message,
        "retryable": retryable,
        "details": if details.is_empty() { Value::Null } else { Value::Object(details) },
    })
}

fn tool_error_detail(e: Option<&Value>) -> Option<String> {
    match e? {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => str_of(Some(m), "code")
            .or_else(|| str_of(Some(m), "message"))
            .map(str::to_string),
        _ => None,
    }
}

/// `log{level, message}` of the runtime-activity records.
fn log_data(ty: &str, payload: Option<&Map<String, Value>>) -> Value {
    let inner = match ty {
        "run.log" => obj(payload.and_then(|p| p.get("entry"))),
        "runner.error" => payload,
        _ => obj(payload.and_then(|p| p.get("update"))),
    };
    let level = str_of(inner, "level").unwrap_or(match ty {
        "runner.error" => "error",
        _ => "info",
    });
    let message = str_of(inner, "message")
        .or_else(|| str_of(inner, "text"))
        .or_else(|| str_of(inner, "chunk"))
        .map(str::to_string)
        .unwrap_or_else(|| {
            inner
                .map(|m| Value::Object(m.clone()).to_string())
                .unwrap_or_default()
        });
    let mut data = json!({ "level": level, "message": message, "source_type": ty });
    if let Some(c) = str_of(inner, "code") {
        data["code"] = Value::String(c.to_string());
    }
    data
}

/// An SSE field line (`name: value`), or `None` when the line is not one.
fn sse_field(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once(':')?;
    if !name.is_empty()
        && !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return None;
    }
    Some((name, value.strip_prefix(' ').unwrap_or(value)))
}

impl Importer for KestrelImporter {
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let text = std::str::from_utf8(line).map_err(|_| "line is not UTF-8".to_string())?;
        let trimmed = text.trim();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            self.flush_sse(out);
            return match serde_json::from_str::<Value>(trimmed) {
                Ok(Value::Object(m)) => {
                    self.record(out, line_no, m, None, None);
                    Ok(())
                }
                Ok(_) => Err("record is not a JSON object".to_string()),
                Err(e) => Err(format!("invalid JSON: {e}")),
            };
        }
        let Some((name, value)) = sse_field(trimmed) else {
            return Err("neither a JSON record nor an SSE field line".to_string());
        };
        match name {
            "event" | "id" => {
                self.flush_sse(out);
                if name == "event" {
                    self.sse.event = Some(value.to_string());
                } else {
                    self.sse.id = Some(value.to_string());
                }
            }
            "data" => {
                if self.sse.data.is_empty() {
                    self.sse.data_line = line_no;
                } else {
                    self.sse.data.push('\n');
                }
                self.sse.data.push_str(value);
                if let Ok(v) = serde_json::from_str::<Value>(&self.sse.data) {
                    let sse = std::mem::take(&mut self.sse);
                    match v {
                        Value::Object(m) => self.record(out, line_no, m, sse.event, sse.id),
                        other => {
                            let at = At {
                                line: line_no,
                                ts: synthetic_ts(0, line_no),
                                syn: true,
                            };
                            let ty = sse.event.unwrap_or_else(|| "sse".to_string());
                            self.keep_unmapped(out, at, &ty, json!({ "value": other }));
                        }
                    }
                }
            }
            // Comments (`: keep-alive`), `retry:` and unknown fields carry no event.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.flush_sse(out);
    }
}

/// The envelope of an SSE record whose data holds the payload alone: its type and id from
/// the SSE fields, its `ts` from the payload.
fn sse_envelope(
    rec: Map<String, Value>,
    sse_type: Option<String>,
    sse_id: Option<String>,
) -> Map<String, Value> {
    let mut env = Map::new();
    if let Some(ty) = sse_type {
        env.insert("type".into(), Value::String(ty));
    }
    if let Some(id) = sse_id {
        env.insert("id".into(), Value::String(id));
    }
    if let Some(ts) = rec.get("ts").cloned() {
        env.insert("ts".into(), ts);
    }
    env.insert("payload".into(), Value::Object(rec));
    env
}

/// `run.tool.started` / `completed` / `failed` (`ty`) with its `update`: a tool call, or
/// its result with status and error detail.
fn tool_event(ty: &str, update: Option<&Map<String, Value>>) -> (&'static str, Value) {
    let upd = |k: &str| str_of(update, k);
    let call_id = upd("toolCallId").unwrap_or_default();
    match ty {
        "run.tool.started" => (
            "tool/call",
            json!({
                "call_id": call_id,
                "name": upd("toolName"),
                "arguments": update.and_then(|u| u.get("input")).cloned().unwrap_or(Value::Null),
            }),
        ),
        "run.tool.completed" => ("tool/result", json!({ "call_id": call_id, "status": "ok" })),
        _ => {
            let mut d = json!({ "call_id": call_id, "status": "error" });
            if let Some(detail) = tool_error_detail(update.and_then(|u| u.get("error"))) {
                d["detail"] = Value::String(detail);
            }
            ("tool/result", d)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    fn run(lines: &[&str]) -> Vec<Event> {
        feed(&mut KestrelImporter::new(&context("k.ndjson")), lines).0
    }

    fn kinds(evs: &[Event]) -> Vec<&str> {
        evs.iter().map(|e| e.kind.as_str()).collect()
    }

    #[test]
    fn sse_records_are_assembled_from_event_and_data_lines() {
        let evs = run(&[
            "event: run.started",
            "id: c1",
            r#"data: {"id":"c1","type":"run.started","ts":"2026-08-01T10:00:00Z","sessionId":"s","runId":"r","payload":{"sessionId":"s"}}"#,
            ": keep-alive",
            "event: run.agent_progress",
            "id: c2",
            r#"data: {"sessionId":"s","runId":"r","#,
            r#"data: "update":{"message":"working"}}"#,
            "event: run.log",
            r#"data: {"broken"#,
            "event: run.completed",
            r#"data: {"result":{"assistantText":"hi","output":{"status":"COMPLETED","sessionId":"s","runId":"r"}}}"#,
        ]);
        assert_eq!(
            kinds(&evs),
            [
                "turn/start",
                "run.started",
                "progress",
                "kestrel:run.log",
                "run.completed",
                "turn/end",
                "agent/idle"
            ]
        );
        assert_eq!(evs[2].line, 8);
        assert_eq!(evs[3].line, 10);
        assert!(evs
            .iter()
            .all(|e| e.root == "s" || e.kind == "kestrel:run.log"));
        assert!(evs[4].data.contains(r#""assistantText":"hi""#));
        assert_eq!(evs[5].turn.as_deref(), Some("r"));
    }

    #[test]
    fn waiting_then_resumed_and_queued_messages_keep_the_agent_busy() {
        let env = |ty: &str, run: &str, payload: &str| {
            format!(
                r#"{{"id":"x","type":"{ty}","ts":"2026-08-01T10:00:00Z","sessionId":"s","runId":"{run}","payload":{payload}}}"#
            )
        };
        let lines = [
            env(
                "conversation.message.routed",
                "",
                r#"{"messageId":"m1","disposition":"started"}"#,
            ),
            env("run.started", "r1", "{}"),
            env(
                "run.completed",
                "r1",
                r#"{"result":{"assistantText":null,"output":{"status":"WAITING","waitFor":{"kind":"approval","interaction":{"requestId":"q1","prompt":"ok?"}}}}}"#,
            ),
            env(
                "conversation.message.routed",
                "",
                r#"{"messageId":"m2","disposition":"queued"}"#,
            ),
            env("run.started", "r1", "{}"),
            env(
                "run.completed",
                "r1",
                r#"{"result":{"assistantText":"done","output":{"status":"COMPLETED"}}}"#,
            ),
            env("run.started", "r2", "{}"),
            env(
                "run.failed",
                "r2",
                r#"{"error":{"code":"MODEL_RATE_LIMITED","message":"slow","details":{"status":429}}}"#,
            ),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let evs = run(&refs);
        assert_eq!(
            kinds(&evs),
            [
                "inbox/receipt",
                "turn/start",
                "run.started",
                "run.completed",
                "callback/open",
                "inbox/receipt",
                "run.started",
                "callback/answer",
                "run.completed",
                "turn/end",
                "turn/start",
                "run.started",
                "run.failed",
                "turn/end",
                "agent/idle"
            ]
        );
        assert!(evs[6].data.contains(r#""attempt":2"#));
        assert!(evs[7].data.contains(r#""callback_id":"q1""#));
        let failed: Value = serde_json::from_str(&evs[12].data).unwrap();
        assert_eq!(failed["error"]["code"], "completion_rate_limited");
        assert_eq!(failed["error"]["details"]["raw_code"], "MODEL_RATE_LIMITED");
        assert_eq!(failed["error"]["details"]["http_status"], 429);
        assert!(evs[0].root == "s" && evs[0].turn.is_none());
    }

    #[test]
    fn bad_lines_are_rejected_not_panicked_on() {
        let ctx = FileContext {
            file_idx: 0,
            name: "k".into(),
            rel: "k".into(),
            keep: None,
        };
        let mut imp = KestrelImporter::new(&ctx);
        let mut out = Vec::new();
        assert!(imp.line(1, b"{nope", &mut out).is_err());
        assert!(imp.line(2, b"hello world", &mut out).is_err());
        assert!(imp.line(3, b"[1]", &mut out).is_err());
        assert!(imp.line(4, b"\xff", &mut out).is_err());
        assert!(imp.line(5, b"retry: 100", &mut out).is_ok());
        imp.finish(&mut out);
        assert!(out.is_empty());
    }
}
