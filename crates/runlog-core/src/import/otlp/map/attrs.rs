//! Reading spans' attributes: the GenAI semantic conventions and OpenInference spellings of
//! operations, tool names and call ids, finish reasons and usage, and whole spans and log
//! records as the data of the `otlp:<name>` events that keep them.

use std::borrow::Cow;

use serde_json::{json, Value};

use super::text::ObjectText;
use super::Op;
use crate::import::otlp::attributes::Attrs;
use crate::import::otlp::{LogRecord, Span};

/// The first of `keys` whose value is a string, when that is not empty.
pub(super) fn str_attr<'a>(attrs: &'a Attrs, keys: &[&str]) -> Option<Cow<'a, str>> {
    keys.iter()
        .find_map(|k| attrs.str(k))
        .filter(|s| !s.is_empty())
}

pub(super) fn int_attr(attrs: &Attrs, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| {
        let raw = attrs.raw(k)?;
        if raw.starts_with('"') {
            attrs.str(k)?.trim().parse().ok()
        } else {
            match serde_json::from_str::<Value>(raw).ok()? {
                Value::Number(n) => n.as_u64(),
                _ => None,
            }
        }
    })
}

pub(super) fn op_of(span: &Span) -> Op {
    // LangSmith's OpenTelemetry export names its run type in `langsmith.span.kind` and
    // guesses `gen_ai.operation.name` apart from it (`chat` on a prompt template's run,
    // `chain` on the chat model's): the run type decides.
    match str_attr(&span.attrs, &["langsmith.span.kind"]).as_deref() {
        Some("llm") => return Op::Inference,
        Some("chain" | "prompt" | "parser") => return Op::Other,
        _ => {}
    }
    let op = str_attr(&span.attrs, &["gen_ai.operation.name"]);
    let oi = str_attr(&span.attrs, &["openinference.span.kind"]);
    match (op.as_deref(), oi.as_deref()) {
        (Some("invoke_agent"), _) | (_, Some("AGENT")) => Op::Agent,
        (Some("chat" | "text_completion" | "generate_content"), _) | (_, Some("LLM")) => {
            Op::Inference
        }
        (Some("execute_tool"), _) | (_, Some("TOOL")) => Op::Tool,
        (Some(_), _) | (_, Some(_)) => Op::Other,
        // OpenLLMetry (Traceloop) names no operation; its chat model spans say
        // `llm.request.type`.
        (None, None) if str_attr(&span.attrs, &["llm.request.type"]).as_deref() == Some("chat") => {
            Op::Inference
        }
        (None, None) => {
            let first = span.name.split(' ').next().unwrap_or("");
            match first {
                "invoke_agent" => Op::Agent,
                "chat" | "text_completion" | "generate_content" => Op::Inference,
                "execute_tool" => Op::Tool,
                _ => Op::Other,
            }
        }
    }
}

/// The tool calls an OpenInference LLM span's output asks for: (name, id), in order.
pub(super) fn output_tool_calls(attrs: &Attrs) -> Vec<(String, String)> {
    let mut calls: Vec<((u64, u64), String, String)> = Vec::new();
    for (k, _) in attrs.iter() {
        let Some(rest) = k.strip_prefix("llm.output_messages.") else {
            continue;
        };
        let Some(prefix) = rest.strip_suffix(".tool_call.id") else {
            continue;
        };
        let mut parts = prefix.split('.');
        let msg = parts.next().and_then(|p| p.parse().ok());
        let call = parts.nth(2).and_then(|p| p.parse().ok());
        let name_key = format!("llm.output_messages.{prefix}.tool_call.function.name");
        if let (Some(m), Some(c), Some(id), Some(name)) =
            (msg, call, attrs.str(k), attrs.str(&name_key))
        {
            calls.push(((m, c), name.into_owned(), id.into_owned()));
        }
    }
    calls.sort();
    calls.into_iter().map(|(_, n, id)| (n, id)).collect()
}

pub(super) const CALL_ID_KEYS: &[&str] = &["gen_ai.tool.call.id", "tool_call.id"];

pub(super) fn tool_name(span: &Span) -> Cow<'_, str> {
    str_attr(&span.attrs, &["gen_ai.tool.name", "tool.name"])
        .or_else(|| span.name.strip_prefix("execute_tool ").map(Cow::Borrowed))
        .unwrap_or(Cow::Borrowed(&span.name))
}

/// `gen_ai.response.finish_reasons` (an array, or one string), else the older
/// `gen_ai.response.finish_reason`.
pub(super) fn finish_reasons(attrs: &Attrs) -> Vec<String> {
    for k in [
        "gen_ai.response.finish_reasons",
        "gen_ai.response.finish_reason",
        "llm.finish_reason",
    ] {
        let value = match attrs.raw(k) {
            // The value is read only when it can be one.
            Some(raw) if raw.starts_with('[') || raw.starts_with('"') => attrs.get(k),
            _ => None,
        };
        match value {
            Some(Value::Array(a)) => {
                return a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            }
            Some(Value::String(s)) if !s.is_empty() => {
                // Some SDKs record the array as its JSON text.
                if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(&s) {
                    return a
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect();
                }
                return vec![s];
            }
            _ => {}
        }
    }
    // OpenInference records none: the response object its LLM span keeps as output (the
    // Responses API's: `incomplete_details.reason`, else `status`; Chat Completions':
    // each choice's `finish_reason`).
    let Some(text) = attrs.str("output.value") else {
        return Vec::new();
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    match o.get("object").and_then(Value::as_str) {
        Some("response") => o
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .or_else(|| o.get("status"))
            .and_then(Value::as_str)
            .map(|r| vec![r.to_string()])
            .unwrap_or_default(),
        Some("chat.completion") => o
            .get("choices")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c.get("finish_reason").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Canonical Usage from the current and earlier spellings of the GenAI conventions and
/// OpenInference's. Input tokens include cached ones (the conventions say so).
pub(super) fn usage(a: &Attrs) -> Option<Value> {
    let input = int_attr(
        a,
        &[
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
        ],
    );
    let output = int_attr(
        a,
        &[
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        ],
    );
    if input.is_none() && output.is_none() {
        return None;
    }
    let cap = |n: Option<u64>| n.unwrap_or(0).min(1 << 53);
    let (input, output) = (cap(input), cap(output));
    let cached = cap(int_attr(
        a,
        &[
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_read_input_tokens",
            "gen_ai.usage.cached_tokens",
            "gen_ai.usage.details.cache_read_tokens",
            "llm.token_count.prompt_details.cache_read",
        ],
    ));
    let cache_write = cap(int_attr(
        a,
        &[
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.usage.cache_creation_input_tokens",
            "gen_ai.usage.details.cache_write_tokens",
            "llm.token_count.prompt_details.cache_write",
        ],
    ));
    let reasoning = cap(int_attr(
        a,
        &[
            "gen_ai.usage.reasoning.output_tokens",
            "gen_ai.usage.reasoning_tokens",
            "gen_ai.usage.details.reasoning_tokens",
            "llm.token_count.completion_details.reasoning",
        ],
    ));
    Some(json!({
        "input_tokens": input,
        "output_tokens": output,
        "total_tokens": input + output,
        "cached_input_tokens": cached,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": reasoning,
    }))
}

/// The whole span, for an `otlp:<name>` event: its JSON text, written from the span without
/// a copy, members in the order of a JSON map (by name) as every event's data is.
pub(super) fn span_record(span: &Span) -> String {
    let mut m = ObjectText::with_capacity(
        span.attrs.text().len() + span.resource.text().len() + span.scope.len() + 512,
    );
    m.member_raw("attributes", span.attrs.text());
    m.member("end_us", &span.end).member("kind", &span.kind);
    if !span.links.is_empty() {
        m.member("links", &span.links);
    }
    m.member("name", &span.name);
    if !span.parent.is_empty() {
        m.member("parent_span_id", &span.parent);
    }
    m.member_raw("resource", span.resource.text());
    m.member_raw("scope", &span.scope);
    m.member("span_id", &span.id)
        .member("start_us", &span.start);
    if span.status != 0 || !span.status_message.is_empty() {
        let status = json!({"code": span.status, "message": span.status_message});
        m.member("status", &status);
    }
    m.member("trace_id", &span.trace);
    if span.start == 0 {
        m.member("ts_synthetic", &true);
    }
    m.finish()
}

pub(super) fn log_record(r: &LogRecord) -> String {
    let mut m = ObjectText::with_capacity(
        r.attrs.text().len() + r.resource.text().len() + r.scope.len() + 512,
    );
    m.member_raw("attributes", r.attrs.text());
    m.member("body", &r.body);
    m.member_raw("resource", r.resource.text());
    m.member_raw("scope", &r.scope);
    m.member("severity_number", &r.severity_number);
    if !r.severity_text.is_empty() {
        m.member("severity_text", &r.severity_text);
    }
    if !r.span.is_empty() {
        m.member("span_id", &r.span);
    }
    if !r.trace.is_empty() {
        m.member("trace_id", &r.trace);
    }
    if r.ts == 0 {
        m.member("ts_synthetic", &true);
    }
    m.finish()
}
