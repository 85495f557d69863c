//! One OTLP span per thing the tables hold, with its attributes: `invoke_agent` for a turn,
//! `chat` for a model call, `execute_tool` for a tool call (the OpenTelemetry GenAI semantic
//! conventions, with OpenInference's span kind and token counts beside them so Phoenix shows
//! them), `callback` and `run` spans, and runlog's own facts under `runlog.*`. Where the
//! span sits (trace, parent, times) is decided by `trace.rs`.

use opentelemetry_proto::tonic::trace::v1::{span::SpanKind as OtlpKind, status, Span, Status};
use serde::Deserialize;
use serde_json::Value;

use super::attrs::Attrs;
use super::rows::{CallbackRow, ErrorRow, ModelRow, RunRow, ToolRow, TurnRow};

/// Where a span sits: its ids, parent and times (microseconds).
#[derive(Debug, Clone, Copy)]
pub struct Place {
    pub trace: [u8; 16],
    pub id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub start_us: i64,
    pub end_us: i64,
    /// The span's thing had not ended when the log did: it ends at its last event.
    pub open: bool,
}

fn nanos(us: i64) -> u64 {
    u64::try_from(us).unwrap_or(0).saturating_mul(1000)
}

fn span(
    place: &Place,
    name: String,
    kind: OtlpKind,
    mut attrs: Attrs,
    err: Option<String>,
) -> Span {
    if place.open {
        attrs.bool("runlog.span.open", true);
    }
    Span {
        trace_id: place.trace.to_vec(),
        span_id: place.id.to_vec(),
        parent_span_id: place.parent.map(|p| p.to_vec()).unwrap_or_default(),
        name,
        kind: kind as i32,
        start_time_unix_nano: nanos(place.start_us),
        end_time_unix_nano: nanos(place.end_us.max(place.start_us)),
        attributes: attrs.0,
        status: err.map(|message| Status {
            message,
            code: status::StatusCode::Error as i32,
        }),
        ..Default::default()
    }
}

/// `runlog.error.*` of an error row (its code is `error.type`, its message the status's).
fn error_attrs(a: &mut Attrs, e: &ErrorRow) {
    a.opt_str("error.type", e.code.as_deref())
        .opt_bool("runlog.error.retryable", e.retryable)
        .opt_bool("runlog.error.retryable_expected", e.retryable_expected)
        .opt_bool("runlog.error.retryable_mismatch", e.retryable_mismatch)
        .opt_int("runlog.error.http_status", e.http_status)
        .opt_bool("runlog.error.status_consistent", e.status_consistent)
        .opt_str("runlog.error.details_reason", e.details_reason.as_deref())
        .opt_bool("runlog.error.retried", e.retried)
        .opt_bool("runlog.error.recovered", e.recovered);
}

/// The status message of a failed span: the error's message, else its code, else `error`.
fn error_message(e: &ErrorRow) -> String {
    e.message
        .clone()
        .filter(|m| !m.is_empty())
        .or_else(|| e.code.clone())
        .unwrap_or_else(|| "error".to_string())
}

/// A turn's state as an attribute value: the state in lower snake case (`running`,
/// `unknown_outcome`), `protocol_error` for a turn end without a kind.
pub fn state_value(state: Option<&str>) -> String {
    match state {
        None => "protocol_error".to_string(),
        Some("UnknownOutcome") => "unknown_outcome".to_string(),
        Some(s) => s.to_ascii_lowercase(),
    }
}

/// The `invoke_agent` span of a turn.
pub fn turn_span(
    root: &str,
    t: &TurnRow,
    agent: Option<&str>,
    place: &Place,
    content: bool,
) -> Span {
    let mut a = Attrs::default();
    a.str("gen_ai.operation.name", "invoke_agent")
        .opt_str("gen_ai.agent.name", agent)
        .str("gen_ai.conversation.id", root)
        .str("openinference.span.kind", "AGENT")
        .str("runlog.session", &t.session)
        .str("runlog.turn.id", &t.turn)
        .bool("runlog.turn.is_root", t.is_root)
        .str("runlog.turn.state", &state_value(t.state.as_deref()))
        .opt_str("runlog.turn.stop_reason", t.stop_reason.as_deref())
        .opt_str("runlog.turn.cause", t.cause.as_deref())
        .opt_str("runlog.turn.outcome", t.outcome.as_deref())
        .opt_str("runlog.turn.finish_class", t.finish_class.as_deref())
        .opt_str("runlog.turn.error_code", t.error_code.as_deref())
        .bool("runlog.turn.inferred", t.inferred)
        .opt_int("runlog.turn.protocol_error", t.protocol_error)
        .int("runlog.turn.start_seq", t.start_seq)
        .opt_int("runlog.turn.end_seq", t.end_seq);
    if let Some(i) = &t.interval {
        a.int("runlog.interval.open_seq", i.open_seq)
            .opt_str("runlog.interval.status", i.status.as_deref())
            .opt_str("runlog.interval.finish_reason", i.finish_reason.as_deref())
            .opt_str("runlog.interval.finish_class", i.finish_class.as_deref());
    }
    let mut err = None;
    if t.state.as_deref() == Some("Failed") {
        let e = t.error.clone().unwrap_or_else(|| ErrorRow {
            code: t.error_code.clone(),
            ..Default::default()
        });
        error_attrs(&mut a, &e);
        err = Some(error_message(&e));
    }
    if content {
        if let Some(text) = t.end_data.as_deref().and_then(turn_text) {
            let messages = serde_json::json!([{
                "role": "assistant",
                "parts": [{"type": "text", "content": text}],
            }]);
            a.str("gen_ai.output.messages", &messages.to_string())
                .str("output.value", &text);
        }
    }
    let name = match agent {
        Some(n) => format!("invoke_agent {n}"),
        None => "invoke_agent".to_string(),
    };
    span(place, name, OtlpKind::Internal, a, err)
}

/// A turn end's answer: its `text`, else its `output` (as JSON text unless a string).
fn turn_text(data: &str) -> Option<String> {
    let v: Value = serde_json::from_str(data).ok()?;
    match v.get("text") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => match v.get("output") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(o) => Some(o.to_string()),
        },
    }
}

/// The fields of a `model/end`'s data the `chat` span uses.
#[derive(Debug, Default, Deserialize)]
pub struct ModelData {
    #[serde(default)]
    finish_reason: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    provider: Option<Value>,
    #[serde(default)]
    duration_ms: Option<Value>,
}

impl ModelData {
    /// The data of a `model/end` (empty when it is not an object).
    pub fn parse(data: &str) -> ModelData {
        serde_json::from_str(data).unwrap_or_default()
    }

    /// How long the call took, in microseconds, when recorded.
    pub fn duration_us(&self) -> Option<i64> {
        let ms = self.duration_ms.as_ref()?.as_f64()?;
        (ms.is_finite() && ms >= 0.0).then_some((ms * 1000.0) as i64)
    }

    fn text(v: &Option<Value>) -> Option<&str> {
        v.as_ref().and_then(Value::as_str).filter(|s| !s.is_empty())
    }

    fn usage(&self, key: &str) -> Option<i64> {
        self.usage.as_ref()?.get(key)?.as_i64()
    }
}

/// The `chat` span of a model call; `model` is the call's model, else its session's.
pub fn model_span(
    root: &str,
    m: &ModelRow,
    d: &ModelData,
    session_model: Option<&str>,
    place: &Place,
) -> Span {
    let model = ModelData::text(&d.model).or(session_model);
    let mut a = Attrs::default();
    a.str("gen_ai.operation.name", "chat")
        .str("gen_ai.conversation.id", root)
        .str("openinference.span.kind", "LLM")
        .opt_str("gen_ai.request.model", model)
        .opt_str("gen_ai.response.model", model)
        .opt_str("llm.model_name", model)
        .opt_str("gen_ai.provider.name", ModelData::text(&d.provider));
    let (input, output) = (d.usage("input_tokens"), d.usage("output_tokens"));
    a.opt_int("gen_ai.usage.input_tokens", input)
        .opt_int("gen_ai.usage.output_tokens", output)
        .opt_int(
            "gen_ai.usage.cache_read.input_tokens",
            d.usage("cached_input_tokens"),
        )
        .opt_int(
            "gen_ai.usage.cache_creation.input_tokens",
            d.usage("cache_write_tokens"),
        )
        .opt_int(
            "gen_ai.usage.reasoning.output_tokens",
            d.usage("reasoning_tokens"),
        )
        .opt_int("llm.token_count.prompt", input)
        .opt_int("llm.token_count.completion", output);
    if input.is_some() || output.is_some() {
        a.int(
            "llm.token_count.total",
            input.unwrap_or(0) + output.unwrap_or(0),
        );
    }
    if let Some(fr) = ModelData::text(&d.finish_reason) {
        a.strs("gen_ai.response.finish_reasons", &[fr]);
    }
    a.str("runlog.session", &m.session)
        .str("runlog.turn.id", &m.turn)
        .int("runlog.seq", m.seq);
    let mut err = None;
    if let Some(e) = &m.error {
        error_attrs(&mut a, e);
        err = Some(error_message(e));
    }
    let name = match model {
        Some(n) => format!("chat {n}"),
        None => "chat".to_string(),
    };
    span(place, name, OtlpKind::Client, a, err)
}

/// The `execute_tool` span of a tool call.
pub fn tool_span(root: &str, t: &ToolRow, place: &Place, content: bool) -> Span {
    let mut a = Attrs::default();
    a.str("gen_ai.operation.name", "execute_tool")
        .str("gen_ai.conversation.id", root)
        .str("openinference.span.kind", "TOOL")
        .str("gen_ai.tool.name", &t.name)
        .str("tool.name", &t.name)
        .str("gen_ai.tool.call.id", &t.call_id)
        .str("runlog.session", &t.session)
        .str("runlog.turn.id", &t.turn)
        .int("runlog.seq", t.seq)
        .opt_str("runlog.tool.status", t.status.as_deref())
        .opt_str("runlog.tool.detail", t.detail.as_deref());
    if content {
        if let Some(args) = &t.arguments {
            a.str("gen_ai.tool.call.arguments", args)
                .str("input.value", args);
        }
    }
    let mut err = None;
    if let Some(s) = t.status.as_deref().filter(|s| *s != "ok") {
        a.str("error.type", s);
        err = Some(
            t.detail
                .clone()
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| s.to_string()),
        );
    }
    span(
        place,
        format!("execute_tool {}", t.name),
        OtlpKind::Internal,
        a,
        err,
    )
}

/// The `callback` span of a callback: from its opening to its answer or its turn's end;
/// `runlog.callback.wait_ms` is how long it waited.
pub fn callback_span(root: &str, c: &CallbackRow, place: &Place) -> Span {
    let mut a = Attrs::default();
    a.str("gen_ai.conversation.id", root)
        .str("runlog.session", &c.session)
        .opt_str("runlog.turn.id", c.turn.as_deref())
        .str("runlog.callback.id", &c.callback_id)
        .opt_str("runlog.callback.kind", c.kind.as_deref())
        .opt_str("runlog.callback.title", c.title.as_deref())
        .opt_str("runlog.callback.closed_by", c.closed_by.as_deref())
        .int("runlog.callback.open_seq", c.open_seq)
        .opt_int("runlog.callback.close_seq", c.close_seq)
        .int(
            "runlog.callback.wait_ms",
            (place.end_us - place.start_us).max(0) / 1000,
        );
    let name = format!("callback {}", c.kind.as_deref().unwrap_or("unknown"));
    span(place, name, OtlpKind::Internal, a, None)
}

/// The `run` span of a run attempt: from `run.started` to its settling event.
pub fn run_span(root: &str, r: &RunRow, place: &Place) -> Span {
    let mut a = Attrs::default();
    a.str("gen_ai.conversation.id", root)
        .str("runlog.run.id", &r.run_id)
        .opt_int("runlog.run.attempt", r.attempt)
        .opt_str("runlog.run.settle", r.settle.as_deref())
        .opt_str("runlog.run.output_status", r.output_status.as_deref())
        .opt_str("runlog.run.wait_for_kind", r.wait_for_kind.as_deref())
        .opt_bool("runlog.run.provisional_tail", r.provisional_tail)
        .opt_str("runlog.run.error_code", r.error_code.as_deref())
        .int("runlog.run.start_seq", r.start_seq)
        .opt_int("runlog.run.settle_seq", r.settle_seq);
    let mut err = None;
    if r.settle.as_deref() == Some("failed") {
        a.opt_str("error.type", r.error_code.as_deref());
        err = Some(r.error_code.clone().unwrap_or_else(|| "failed".to_string()));
    }
    span(
        place,
        format!("run {}", r.run_id),
        OtlpKind::Internal,
        a,
        err,
    )
}
