//! The OpenAI Agents SDK as Pydantic Logfire traces it (`logfire.instrument_openai_agents()`,
//! tracer `logfire.openai_agents`). Logfire names each span by its message template and sets
//! `gen_ai.operation.name` only on a model call that answered: an agent run is
//! `Agent run: {name!r}` (the agent in `name`), a model call `Responses API with …` or
//! `Chat completion with …` (the response object in `response`), a tool call
//! `Function: {name}` (the tool in `name`, its arguments in `input`, its result in `output`).
//! A failure is the span's status with an `error` attribute: `{"message": …, "data":
//! {"error": <the exception's text>}}`, without an exception event on an agent run.

use std::borrow::Cow;

use serde_json::Value;

use super::attrs::{scope_name, str_attr};
use super::Op;
use crate::import::otlp::Span;

const SCOPE: &str = "logfire.openai_agents";
const TEMPLATE: &str = "logfire.msg_template";

/// A Logfire span's message template, when it is one of the OpenAI Agents SDK's.
fn template(span: &Span) -> Option<Cow<'_, str>> {
    let t = str_attr(&span.attrs, &[TEMPLATE])?;
    (scope_name(span).as_deref() == Some(SCOPE)).then_some(t)
}

/// What a Logfire span of the OpenAI Agents SDK is, by its message template.
pub(super) fn op(span: &Span) -> Option<Op> {
    let t = template(span)?;
    if t.starts_with("Agent run: ") {
        Some(Op::Agent)
    } else if t.starts_with("Responses API") || t.starts_with("Chat completion with ") {
        Some(Op::Inference)
    } else if t.starts_with("Function: ") {
        Some(Op::Tool)
    } else {
        None
    }
}

/// The `name` of an agent run or a tool call span.
pub(super) fn name(span: &Span) -> Option<Cow<'_, str>> {
    let t = template(span)?;
    let named = t.starts_with("Agent run: ") || t.starts_with("Function: ");
    str_attr(&span.attrs, &["name"]).filter(|_| named)
}

/// A tool call span's arguments (`input`) or result (`output`), as JSON text.
pub(super) fn tool_value<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    let t = template(span)?;
    t.starts_with("Function: ")
        .then(|| span.attrs.raw(key))
        .flatten()
}

/// The function calls a model call's response asks for (a Responses API object's `output`
/// items of type `function_call`): (name, call id), in order.
pub(super) fn tool_calls(span: &Span) -> Vec<(String, String)> {
    if template(span).is_none() {
        return Vec::new();
    }
    let Some(Value::Object(mut response)) = span.attrs.get("response").and_then(|v| match v {
        Value::String(s) => serde_json::from_str(&s).ok(),
        v => Some(v),
    }) else {
        return Vec::new();
    };
    let Some(Value::Array(items)) = response.remove("output") else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|i| i["type"] == "function_call")
        .filter_map(|i| Some((i["name"].as_str()?.into(), i["call_id"].as_str()?.into())))
        .collect()
}

/// The text of a failure Logfire states in its `error` attribute: `data.error` (the
/// exception's text), else `message`.
pub(super) fn error_text(span: &Span) -> Option<String> {
    template(span)?;
    let error = match span.attrs.get("error")? {
        Value::String(s) => serde_json::from_str::<Value>(&s).ok()?,
        v => v,
    };
    error["data"]["error"]
        .as_str()
        .or_else(|| error["message"].as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}
