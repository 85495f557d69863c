//! Reading spans' attributes: the GenAI semantic conventions and OpenInference spellings of
//! operations, tool names and call ids, finish reasons and usage, the names frameworks write
//! of their own, and whole spans and log records as the data of the `otlp:<name>` events that
//! keep them.

use std::borrow::Cow;

use serde_json::{json, Value};

use super::text::{ObjectText, Written};
use super::Op;
use crate::import::otlp::attributes::Attrs;
use crate::import::otlp::{LogRecord, Span};

/// Where each canonical field is read, the first present winning: the GenAI semantic
/// conventions' current names, then their earlier ones, OpenInference's, then the names
/// frameworks write of their own (the Vercel AI SDK's `ai.*`, Google ADK's
/// `gcp.vertex.agent.*`, Strands', Haystack's `haystack.*`). docs/importers/otlp.md lists the
/// same table.
pub(super) mod keys {
    pub(in super::super) const INPUT_TOKENS: &[&str] = &[
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.prompt_tokens",
        "llm.token_count.prompt",
        "ai.usage.inputTokens",
        "ai.usage.promptTokens",
    ];
    pub(in super::super) const OUTPUT_TOKENS: &[&str] = &[
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
        "llm.token_count.completion",
        "ai.usage.outputTokens",
        "ai.usage.completionTokens",
    ];
    pub(in super::super) const CACHE_READ_TOKENS: &[&str] = &[
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "gen_ai.usage.cached_tokens",
        "gen_ai.usage.details.cache_read_tokens",
        "llm.token_count.prompt_details.cache_read",
        "ai.usage.inputTokenDetails.cacheReadTokens",
        "ai.usage.cachedInputTokens",
    ];
    pub(in super::super) const CACHE_WRITE_TOKENS: &[&str] = &[
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
        "gen_ai.usage.cache_write_input_tokens",
        "gen_ai.usage.details.cache_write_tokens",
        "llm.token_count.prompt_details.cache_write",
        "ai.usage.inputTokenDetails.cacheWriteTokens",
    ];
    pub(in super::super) const REASONING_TOKENS: &[&str] = &[
        "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.usage.reasoning_tokens",
        "gen_ai.usage.details.reasoning_tokens",
        "llm.token_count.completion_details.reasoning",
        "ai.usage.outputTokenDetails.reasoningTokens",
        "ai.usage.reasoningTokens",
    ];
    pub(in super::super) const FINISH_REASONS: &[&str] = &[
        "gen_ai.response.finish_reasons",
        "gen_ai.response.finish_reason",
        "llm.finish_reason",
        "ai.response.finishReason",
    ];
    pub(in super::super) const MODEL: &[&str] = &[
        "gen_ai.response.model",
        "gen_ai.request.model",
        "llm.model_name",
        "ai.response.model",
        "ai.model.id",
    ];
    pub(in super::super) const PROVIDER: &[&str] = &[
        "gen_ai.provider.name",
        "gen_ai.system",
        "llm.provider",
        "llm.system",
        "ai.model.provider",
    ];
    pub(in super::super) const AGENT_NAME: &[&str] = &[
        "gen_ai.agent.name",
        "agent_name",
        "agent.name",
        "graph.node.id",
    ];
    pub(in super::super) const CONVERSATION: &[&str] = &["gen_ai.conversation.id", "session.id"];
    pub(in super::super) const TOOL_NAME: &[&str] = &[
        "gen_ai.tool.name",
        "tool.name",
        "ai.toolCall.name",
        "haystack.tool.name",
    ];
    pub(in super::super) const CALL_ID: &[&str] =
        &["gen_ai.tool.call.id", "tool_call.id", "ai.toolCall.id"];
    pub(in super::super) const TOOL_ARGUMENTS: &[&str] = &[
        "gen_ai.tool.call.arguments",
        "tool.parameters",
        "input.value",
        "ai.toolCall.args",
        "ai.toolCall.input",
        "gcp.vertex.agent.tool_call_args",
        "haystack.agent.step.tool.input",
    ];
    pub(in super::super) const TOOL_RESULT: &[&str] = &[
        "gen_ai.tool.call.result",
        "output.value",
        "ai.toolCall.result",
        "ai.toolCall.output",
        "gcp.vertex.agent.tool_response",
        "haystack.agent.step.tool.output",
    ];
    pub(in super::super) const TURN_OUTPUT: &[&str] = &[
        "final_result",
        "output.value",
        "ai.response.text",
        "haystack.agent.output",
    ];
}

/// Values producers write where an id is unknown (Google ADK's tool spans), taken as absent.
const PLACEHOLDERS: &[&str] = &["<not specified>"];

/// The first of `keys` whose value is a string, when that is not empty (nor a placeholder).
pub(super) fn str_attr<'a>(attrs: &'a Attrs, keys: &[&str]) -> Option<Cow<'a, str>> {
    keys.iter()
        .find_map(|k| attrs.str(k))
        .filter(|s| !s.is_empty() && !PLACEHOLDERS.contains(&s.as_ref()))
}

/// The JSON text of the first of `keys` present, as it is.
pub(super) fn any_attr<'a>(attrs: &'a Attrs, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| attrs.raw(k))
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
        // Google ADK's span around parallel calls' results, besides each call's own span.
        (Some("execute_tool"), _) if span.name == "execute_tool (merged)" => Op::Other,
        (Some("invoke_agent"), _) | (_, Some("AGENT")) => Op::Agent,
        (Some(o), _) if INFERENCE_OPS.contains(&o) => Op::Inference,
        (_, Some("LLM")) => Op::Inference,
        (Some("execute_tool"), _) | (_, Some("TOOL")) => Op::Tool,
        (Some(_), _) | (_, Some(_)) => Op::Other,
        (None, None) => op_without_name(span),
    }
}

/// Inference operations: the conventions' and Semantic Kernel's (`chat.completions`, …).
const INFERENCE_OPS: &[&str] = &[
    "chat",
    "text_completion",
    "generate_content",
    "chat.completions",
    "chat.streaming_completions",
    "text.completions",
    "text.streaming_completions",
];

/// A span that names no operation: by what its producer writes instead.
fn op_without_name(span: &Span) -> Op {
    // OpenLLMetry (Traceloop) names no operation; its chat model spans say
    // `llm.request.type`.
    if str_attr(&span.attrs, &["llm.request.type"]).as_deref() == Some("chat") {
        return Op::Inference;
    }
    // The Vercel AI SDK's own telemetry: `ai.generateText` (a run of model calls and tool
    // calls) and its provider calls `ai.generateText.doGenerate`, tools `ai.toolCall`.
    if let Some(id) = str_attr(&span.attrs, &["ai.operationId"]) {
        return match id.as_ref() {
            "ai.generateText" | "ai.streamText" | "ai.generateObject" | "ai.streamObject" => {
                Op::Agent
            }
            "ai.toolCall" => Op::Tool,
            id if id.ends_with(".doGenerate") || id.ends_with(".doStream") => {
                if id.starts_with("ai.embed") {
                    Op::Other
                } else {
                    Op::Inference
                }
            }
            _ => Op::Other,
        };
    }
    // Logfire's spans of the OpenAI Agents SDK, by their message templates.
    if let Some(op) = super::logfire::op(span) {
        return op;
    }
    // Haystack's tracer: `haystack.agent.run`, `haystack.agent.step.llm`, `…step.tool`.
    if let Some(op) = super::haystack::op(&span.name) {
        return op;
    }
    // Google ADK before it named operations: `agent_run [name]` and `call_llm` (the names
    // first, so that the scope is read only for these).
    let adk_agent = span.name.starts_with("agent_run [");
    if (adk_agent || span.name == "call_llm")
        && scope_name(span).as_deref() == Some("gcp.vertex.agent")
    {
        return if adk_agent { Op::Agent } else { Op::Inference };
    }
    let first = span.name.split(' ').next().unwrap_or("");
    match first {
        "invoke_agent" => Op::Agent,
        "chat" | "text_completion" | "generate_content" => Op::Inference,
        "execute_tool" => Op::Tool,
        _ => Op::Other,
    }
}

/// The name of the span's instrumentation scope (kept as its JSON text).
pub(super) fn scope_name(span: &Span) -> Option<String> {
    match serde_json::from_str::<Value>(&span.scope)
        .ok()?
        .get_mut("name")?
        .take()
    {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// An agent span's name: `gen_ai.agent.name` and its other spellings, else Logfire's `name`
/// of an `Agent run`, else Google ADK's `agent_run [name]`, else smolagents' `name.run`
/// (OpenInference's smolagents tracer names the agent in the span name only).
pub(super) fn agent_name(span: &Span) -> Option<Cow<'_, str>> {
    str_attr(&span.attrs, keys::AGENT_NAME)
        .or_else(|| super::logfire::name(span))
        .or_else(|| {
            span.name
                .strip_prefix("agent_run [")
                .and_then(|n| n.strip_suffix(']'))
                .map(Cow::Borrowed)
        })
        .or_else(|| {
            let name = span.name.strip_suffix(".run").filter(|n| !n.is_empty())?;
            let smolagents = scope_name(span).as_deref() == Some(SMOLAGENTS_SCOPE);
            smolagents.then_some(Cow::Borrowed(name))
        })
}

const SMOLAGENTS_SCOPE: &str = "openinference.instrumentation.smolagents";

/// The tool calls an inference span's output asks for: (name, id), in order. OpenInference's
/// `llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*`, else Haystack's replies,
/// else the Responses API object Logfire keeps in `response`.
pub(super) fn output_tool_calls(span: &Span) -> Vec<(String, String)> {
    let attrs = &span.attrs;
    let mut calls = openinference_tool_calls(attrs);
    if calls.is_empty() {
        calls = super::haystack::tool_calls(attrs);
    }
    if calls.is_empty() {
        calls = super::logfire::tool_calls(span);
    }
    calls
}

fn openinference_tool_calls(attrs: &Attrs) -> Vec<(String, String)> {
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

pub(super) fn tool_name(span: &Span) -> Cow<'_, str> {
    str_attr(&span.attrs, keys::TOOL_NAME)
        .or_else(|| super::logfire::name(span))
        .or_else(|| span.name.strip_prefix("execute_tool ").map(Cow::Borrowed))
        .unwrap_or(Cow::Borrowed(&span.name))
}

/// An inference span's finish reasons: its attributes (`gen_ai.response.finish_reasons`, an
/// array or its JSON text, and the other spellings of `keys::FINISH_REASONS`), else the
/// output messages it records (`gen_ai.output.messages`, as an attribute or on a
/// `gen_ai.client.inference.operation.details` event), else its `gen_ai.choice` events'
/// `finish_reason` (Strands), else the response OpenInference keeps in `output.value`.
pub(super) fn finish_reasons(span: &Span) -> Vec<String> {
    let attrs = &span.attrs;
    for k in keys::FINISH_REASONS {
        let value = match attrs.raw(k) {
            // The value is read only when it can be one.
            Some(raw) if raw.starts_with('[') || raw.starts_with('"') => attrs.get(k),
            _ => None,
        };
        match value {
            Some(Value::Array(a)) => return strings(&a),
            Some(Value::String(s)) if !s.is_empty() => {
                // Some SDKs record the array as its JSON text, Semantic Kernel joins the
                // reasons with commas.
                if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(&s) {
                    return strings(&a);
                }
                return s.split(',').map(str::to_string).collect();
            }
            _ => {}
        }
    }
    let details = span
        .events
        .iter()
        .filter(|e| e.name == "gen_ai.client.inference.operation.details")
        .map(|e| &e.attrs);
    for a in std::iter::once(attrs).chain(details) {
        let reasons = output_message_reasons(a);
        if !reasons.is_empty() {
            return reasons;
        }
    }
    let choices: Vec<String> = span
        .events
        .iter()
        .filter(|e| e.name == "gen_ai.choice")
        .filter_map(|e| str_attr(&e.attrs, &["finish_reason"]))
        .map(Cow::into_owned)
        .collect();
    if !choices.is_empty() {
        return choices;
    }
    let reasons = openinference_reasons(attrs);
    if reasons.is_empty() {
        return super::haystack::finish_reasons(attrs);
    }
    reasons
}

fn strings(a: &[Value]) -> Vec<String> {
    a.iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// The `finish_reason` of each message in `gen_ai.output.messages` (JSON text or an array).
fn output_message_reasons(attrs: &Attrs) -> Vec<String> {
    // The messages are read only when they name a finish reason.
    let key = "gen_ai.output.messages";
    if !attrs
        .raw(key)
        .is_some_and(|raw| raw.contains("finish_reason"))
    {
        return Vec::new();
    }
    let messages = match attrs.get(key) {
        Some(Value::Array(a)) => a,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Array(a)) => a,
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    messages
        .iter()
        .filter_map(|m| m.get("finish_reason").and_then(Value::as_str))
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect()
}

/// OpenInference records no finish reason: the response object its LLM span keeps as output
/// (the Responses API's: `incomplete_details.reason`, else `status`; Chat Completions': each
/// choice's `finish_reason`; smolagents' message keeps the response as Python's text of it in
/// `raw`).
fn openinference_reasons(attrs: &Attrs) -> Vec<String> {
    let Some(text) = attrs.str("output.value") else {
        return Vec::new();
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    if let Some(raw) = o.get("raw").and_then(Value::as_str) {
        return repr_reasons(raw);
    }
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

/// The finish reasons of a response as Python prints the SDKs' objects: each
/// `Choice(finish_reason='length', …` (the OpenAI SDK's `ChatCompletion`) or
/// `Choices(finish_reason='length', …` (LiteLLM's `ModelResponse`).
fn repr_reasons(raw: &str) -> Vec<String> {
    let mut reasons = Vec::new();
    for marker in ["Choice(finish_reason='", "Choices(finish_reason='"] {
        for (at, _) in raw.match_indices(marker) {
            let rest = &raw[at + marker.len()..];
            if let Some(end) = rest.find('\'') {
                reasons.push(rest[..end].to_string());
            }
        }
    }
    reasons
}

/// Canonical Usage from the current and earlier spellings of the GenAI conventions and
/// OpenInference's, else Haystack's replies. Input tokens include cached ones (the conventions say so).
pub(super) fn usage(a: &Attrs) -> Option<Value> {
    let input = int_attr(a, keys::INPUT_TOKENS);
    let output = int_attr(a, keys::OUTPUT_TOKENS);
    if input.is_none() && output.is_none() {
        return super::haystack::usage(a);
    }
    let cap = |n: Option<u64>| n.unwrap_or(0).min(1 << 53);
    let (input, output) = (cap(input), cap(output));
    let cached = cap(int_attr(a, keys::CACHE_READ_TOKENS));
    let cache_write = cap(int_attr(a, keys::CACHE_WRITE_TOKENS));
    let reasoning = cap(int_attr(a, keys::REASONING_TOKENS));
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
pub(super) fn span_record(span: &Span) -> Written {
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

pub(super) fn log_record(r: &LogRecord) -> Written {
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
