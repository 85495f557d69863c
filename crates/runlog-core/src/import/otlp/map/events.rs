//! The canonical events of agent, inference and tool spans: the opening and closing of an
//! invocation, its turn, `model/end` and `tool/call` / `tool/result`.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::attrs::{any_attr, finish_reasons, keys, span_record, str_attr, tool_name, usage};
use super::errors::span_error;
use super::text::{ObjectText, Written};
use super::{ts_or, Ctx, Out, PHASE_BODY, PHASE_CLOSE, PHASE_IDLE, PHASE_OPEN};
use crate::import::otlp::attributes::Attrs;
use crate::import::otlp::Span;

/// How an agent span opens (and closes) what it is in.
pub(super) enum Opening<'a> {
    /// A root invocation: a synthetic receipt at its start, a synthetic idle at its end.
    Receipt,
    /// A subagent session of the given context, with the agent's name: `session/start` and
    /// `session/end`.
    Session(&'a Ctx, Option<Cow<'a, str>>),
    /// A turn of a container's session: nothing beyond the turn.
    Nothing,
}

/// The events of an agent span: its opening, its turn (`turn/start`, `turn/end`; none for a
/// container) and its closing.
pub(super) fn agent_events(
    o: &mut Out,
    span: &Span,
    ctx: &Ctx,
    opening: Opening<'_>,
    turn: bool,
    last: &LastCall,
    excs: &[&Attrs],
) {
    let start = ts_or(span.start, span.end);
    let line = span.line;
    match opening {
        Opening::Receipt => {
            let receipt = json!({"message_id": span.id, "kind": "prompt", "synthetic": true});
            o.push(
                line,
                start,
                PHASE_OPEN,
                &ctx.no_turn(),
                "inbox/receipt",
                receipt,
            );
        }
        Opening::Session(p, ref name) => {
            let data = json!({"parent": p.session.as_str(), "parent_turn": p.turn.as_deref(), "name": name});
            o.push(
                line,
                start,
                PHASE_OPEN,
                &ctx.no_turn(),
                "session/start",
                data,
            );
        }
        Opening::Nothing => {}
    }
    if turn {
        o.push_text(
            line,
            start,
            PHASE_OPEN,
            ctx,
            "turn/start",
            span_record(span),
        );
    }
    if span.end == 0 {
        return;
    }
    let error = span_error(span, excs);
    if turn {
        let data = turn_end(span, error.clone(), last);
        o.push_text(line, span.end, PHASE_CLOSE, ctx, "turn/end", data);
    }
    match opening {
        Opening::Receipt => {
            let idle = json!({"synthetic": true});
            o.push(
                line,
                span.end,
                PHASE_IDLE,
                &ctx.no_turn(),
                "agent/idle",
                idle,
            );
        }
        Opening::Session(..) => {
            let status = if error.is_some() { "failed" } else { "closed" };
            let end = json!({"status": status, "synthetic": true});
            o.push(
                line,
                span.end,
                PHASE_CLOSE,
                &ctx.no_turn(),
                "session/end",
                end,
            );
        }
        Opening::Nothing => {}
    }
}

/// How an invocation's last inference ended.
#[derive(Debug, Default)]
pub(super) struct LastCall {
    pub(super) finish: Option<String>,
    pub(super) error: Option<Value>,
}

/// Finish reasons that end a turn `max_tokens`, compared as `finish_kind` writes them: the
/// conventions' and OpenAI's `length`, Anthropic's, Strands' and Gemini's `max_tokens`, the
/// Responses API's `max_output_tokens`.
const MAX_TOKENS_REASONS: &[&str] = &["length", "max_tokens", "max_output_tokens"];

/// Finish reasons that end a turn `refusal`: `content_filter` (the conventions, OpenAI),
/// `content-filter` (Vercel AI SDK), `refusal` (Anthropic), `safety` (Gemini),
/// `guardrail_intervened` and `content_filtered` (Strands).
const REFUSAL_REASONS: &[&str] = &[
    "content_filter",
    "content-filter",
    "refusal",
    "safety",
    "guardrail_intervened",
    "content_filtered",
];

/// A finish reason as compared with the lists above: lower case, without the enum's name a
/// Python enum's `str()` puts before it (Semantic Kernel writes `FinishReason.LENGTH`).
fn finish_kind(reason: &str) -> String {
    let r = reason.strip_prefix("FinishReason.").unwrap_or(reason);
    r.to_ascii_lowercase()
}

/// `turn/end` of an agent span: failed when the span failed, or (inferred) when its last
/// inference failed; else by that inference's finish reason.
pub(super) fn turn_end(span: &Span, error: Option<Value>, last: &LastCall) -> Written {
    let mut reason = Map::new();
    let inferred = error.is_none() && last.error.is_some();
    let error = error.or_else(|| last.error.clone());
    let finish = last.finish.as_deref().map(finish_kind);
    let kind = match (&error, finish.as_deref()) {
        (Some(_), _) => "error",
        (None, Some(f)) if MAX_TOKENS_REASONS.contains(&f) => "max_tokens",
        (None, Some(f)) if REFUSAL_REASONS.contains(&f) => "refusal",
        (None, _) => "completed",
    };
    reason.insert("kind".into(), kind.into());
    if let Some(f) = &last.finish {
        reason.insert("cause".into(), f.clone().into());
    }
    if let Some(e) = error {
        reason.insert("error".into(), e);
    }
    let mut data = ObjectText::new();
    if inferred {
        data.member("inferred", &true);
    }
    match any_attr(&span.attrs, keys::TURN_OUTPUT) {
        Some(t) if t.starts_with('"') => {
            data.member("reason", &reason).member("span_id", &span.id);
            data.member_raw("text", t);
        }
        Some(v) => {
            data.member_raw("output", v).member("reason", &reason);
            data.member("span_id", &span.id);
        }
        None => {
            data.member("reason", &reason).member("span_id", &span.id);
        }
    }
    data.finish()
}

pub(super) fn model_end(o: &mut Out, span: &Span, ctx: &Ctx, excs: &[&Attrs]) {
    let a = &span.attrs;
    let reasons = finish_reasons(span);
    let model = str_attr(a, keys::MODEL).or_else(|| super::haystack::model(a).map(Cow::Owned));
    let provider = str_attr(a, keys::PROVIDER);
    let mut data = ObjectText::with_capacity(a.text().len() + 512);
    data.member_raw("attributes", a.text());
    if span.start != 0 && span.end >= span.start {
        data.member("duration_ms", &((span.end - span.start) as f64 / 1000.0));
    }
    if let Some(e) = span_error(span, excs) {
        data.member("error", &e);
    }
    if let Some(f) = reasons.last() {
        data.member("finish_reason", f);
    }
    if reasons.len() > 1 {
        data.member("finish_reasons", &reasons);
    }
    if let Some(m) = &model {
        data.member("model", m);
    }
    data.member("name", &span.name);
    if let Some(p) = &provider {
        data.member("provider", p);
    }
    data.member("span_id", &span.id);
    if let Some(u) = usage(a) {
        data.member("usage", &u);
    }
    o.push_text(
        span.line,
        ts_or(span.end, span.start),
        PHASE_BODY,
        ctx,
        "model/end",
        data.finish(),
    );
}

/// Where a tool span that has no arguments attribute records them: Strands' `gen_ai.tool.message`
/// span event, its `content`.
const TOOL_INPUT_EVENT: (&str, &str) = ("gen_ai.tool.message", "content");

/// Where a tool span that has no result attribute records it: Strands' `gen_ai.choice` span
/// event, its `message`.
const TOOL_OUTPUT_EVENT: (&str, &str) = ("gen_ai.choice", "message");

/// The JSON text of attribute `key` of the span's last event named `name`.
fn event_attr<'a>(span: &'a Span, (name, key): (&str, &str)) -> Option<&'a str> {
    span.events
        .iter()
        .rev()
        .filter(|e| e.name == name)
        .find_map(|e| e.attrs.raw(key))
}

pub(super) fn tool_events(o: &mut Out, span: &Span, ctx: &Ctx, inferred_id: Option<&String>) {
    let a = &span.attrs;
    let call_id = str_attr(a, keys::CALL_ID)
        .or(inferred_id.map(|id| Cow::Borrowed(id.as_str())))
        .unwrap_or(Cow::Borrowed(&span.id));
    let name = tool_name(span);
    let arguments = any_attr(a, keys::TOOL_ARGUMENTS)
        .or_else(|| event_attr(span, TOOL_INPUT_EVENT))
        .or_else(|| super::logfire::tool_value(span, "input"));
    let mut call = ObjectText::with_capacity(a.text().len() + arguments.map_or(0, str::len) + 256);
    match arguments {
        // A string of JSON is that JSON; another string itself.
        Some(raw) if raw.starts_with('"') => {
            let s: String = serde_json::from_str(raw).unwrap_or_default();
            let v = serde_json::from_str(&s).unwrap_or(Value::String(s));
            call.member("arguments", &v)
        }
        Some(raw) => call.member_raw("arguments", raw),
        None => call.member("arguments", &Value::Null),
    };
    call.member_raw("attributes", a.text());
    call.member("call_id", &call_id);
    if inferred_id.is_some() {
        call.member("call_id_inferred", &true);
    }
    call.member("name", &name).member("span_id", &span.id);
    o.push_text(
        span.line,
        ts_or(span.start, span.end),
        PHASE_BODY,
        ctx,
        "tool/call",
        call.finish(),
    );
    if span.end == 0 {
        return;
    }
    let mut result = ObjectText::new();
    result.member("call_id", &call_id);
    let failed = span.status == 2
        || a.contains_key("error.type")
        || a.get(super::haystack::TOOL_ERROR) == Some(Value::Bool(true));
    if failed {
        // The error's message (its exception's, else the status message), else its type.
        let detail = span_error(span, &[])
            .and_then(|e| e.get("message").and_then(Value::as_str).map(str::to_string))
            .filter(|m| !m.is_empty());
        if let Some(d) = detail {
            result.member("detail", &d);
        }
    }
    let output = any_attr(a, keys::TOOL_RESULT)
        .or_else(|| event_attr(span, TOOL_OUTPUT_EVENT))
        .or_else(|| super::logfire::tool_value(span, "output"));
    if let Some(r) = output {
        result.member_raw("result", r);
    }
    result.member("status", if failed { "error" } else { "ok" });
    o.push_text(
        span.line,
        span.end,
        PHASE_BODY,
        ctx,
        "tool/result",
        result.finish(),
    );
}
