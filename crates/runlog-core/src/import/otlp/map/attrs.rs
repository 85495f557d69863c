//! Reading spans' attributes: the GenAI semantic conventions and OpenInference spellings of
//! operations, tool names and call ids, finish reasons and usage, and whole spans and log
//! records as the data of the `otlp:<name>` events that keep them.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Map, Value};

use super::Op;
use crate::import::otlp::{LogRecord, Span};

pub(super) fn str_attr<'a>(attrs: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| attrs.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

pub(super) fn int_attr(attrs: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| match attrs.get(*k)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

pub(super) fn op_of(span: &Span) -> Op {
    // LangSmith's OpenTelemetry export names its run type in `langsmith.span.kind` and
    // guesses `gen_ai.operation.name` apart from it (`chat` on a prompt template's run,
    // `chain` on the chat model's): the run type decides.
    match str_attr(&span.attrs, &["langsmith.span.kind"]) {
        Some("llm") => return Op::Inference,
        Some("chain" | "prompt" | "parser") => return Op::Other,
        _ => {}
    }
    let op = str_attr(&span.attrs, &["gen_ai.operation.name"]);
    let oi = str_attr(&span.attrs, &["openinference.span.kind"]);
    match (op, oi) {
        (Some("invoke_agent"), _) | (_, Some("AGENT")) => Op::Agent,
        (Some("chat" | "text_completion" | "generate_content"), _) | (_, Some("LLM")) => {
            Op::Inference
        }
        (Some("execute_tool"), _) | (_, Some("TOOL")) => Op::Tool,
        (Some(_), _) | (_, Some(_)) => Op::Other,
        // OpenLLMetry (Traceloop) names no operation; its chat model spans say
        // `llm.request.type`.
        (None, None) if str_attr(&span.attrs, &["llm.request.type"]) == Some("chat") => {
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
pub(super) fn output_tool_calls(attrs: &Map<String, Value>) -> Vec<(String, String)> {
    let mut calls: Vec<((u64, u64), String, String)> = Vec::new();
    for (k, v) in attrs {
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
        if let (Some(m), Some(c), Some(id), Some(name)) = (
            msg,
            call,
            v.as_str(),
            attrs.get(&name_key).and_then(Value::as_str),
        ) {
            calls.push(((m, c), name.to_string(), id.to_string()));
        }
    }
    calls.sort();
    calls.into_iter().map(|(_, n, id)| (n, id)).collect()
}

pub(super) const CALL_ID_KEYS: &[&str] = &["gen_ai.tool.call.id", "tool_call.id"];

pub(super) fn tool_name(span: &Span) -> &str {
    str_attr(&span.attrs, &["gen_ai.tool.name", "tool.name"])
        .or_else(|| span.name.strip_prefix("execute_tool "))
        .unwrap_or(&span.name)
}

/// `gen_ai.response.finish_reasons` (an array, or one string), else the older
/// `gen_ai.response.finish_reason`.
pub(super) fn finish_reasons(attrs: &Map<String, Value>) -> Vec<String> {
    for k in [
        "gen_ai.response.finish_reasons",
        "gen_ai.response.finish_reason",
        "llm.finish_reason",
    ] {
        match attrs.get(k) {
            Some(Value::Array(a)) => {
                return a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            }
            Some(Value::String(s)) if !s.is_empty() => {
                // Some SDKs record the array as its JSON text.
                if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(s) {
                    return a
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect();
                }
                return vec![s.clone()];
            }
            _ => {}
        }
    }
    // OpenInference records none: the response object its LLM span keeps as output (the
    // Responses API's: `incomplete_details.reason`, else `status`; Chat Completions':
    // each choice's `finish_reason`).
    let Some(Value::String(text)) = attrs.get("output.value") else {
        return Vec::new();
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
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
pub(super) fn usage(a: &Map<String, Value>) -> Option<Value> {
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
    serde_json::to_string(&SpanRecord(span)).unwrap_or_else(|_| "{}".to_string())
}

struct SpanRecord<'a>(&'a Span);

impl Serialize for SpanRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let span = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("attributes", &span.attrs)?;
        m.serialize_entry("end_us", &span.end)?;
        m.serialize_entry("kind", &span.kind)?;
        if !span.links.is_empty() {
            m.serialize_entry("links", &span.links)?;
        }
        m.serialize_entry("name", &span.name)?;
        if !span.parent.is_empty() {
            m.serialize_entry("parent_span_id", &span.parent)?;
        }
        m.serialize_entry("resource", &*span.resource)?;
        m.serialize_entry("scope", &*span.scope)?;
        m.serialize_entry("span_id", &span.id)?;
        m.serialize_entry("start_us", &span.start)?;
        if span.status != 0 || !span.status_message.is_empty() {
            let status = json!({"code": span.status, "message": span.status_message});
            m.serialize_entry("status", &status)?;
        }
        m.serialize_entry("trace_id", &span.trace)?;
        if span.start == 0 {
            m.serialize_entry("ts_synthetic", &true)?;
        }
        m.end()
    }
}

pub(super) fn log_record(r: &LogRecord) -> Value {
    let mut m = Map::new();
    if !r.trace.is_empty() {
        m.insert("trace_id".into(), r.trace.clone().into());
    }
    if !r.span.is_empty() {
        m.insert("span_id".into(), r.span.clone().into());
    }
    m.insert("severity_number".into(), r.severity_number.into());
    if !r.severity_text.is_empty() {
        m.insert("severity_text".into(), r.severity_text.clone().into());
    }
    m.insert("body".into(), r.body.clone());
    m.insert("attributes".into(), Value::Object(r.attrs.clone()));
    m.insert("scope".into(), (*r.scope).clone());
    m.insert("resource".into(), Value::Object((*r.resource).clone()));
    if r.ts == 0 {
        m.insert("ts_synthetic".into(), true.into());
    }
    Value::Object(m)
}
