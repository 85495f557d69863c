//! Haystack's agents as its OpenTelemetry tracer writes them (the `opentelemetry-haystack`
//! integration's `OpenTelemetryTracer`; tracer `haystack` unless the application names its
//! own). Its spans name no operation but say what they are by their names:
//! `haystack.agent.run` (an agent run), `haystack.agent.step.llm` (a model call),
//! `haystack.agent.step.tool` (a tool call). With content tracing on, a model call's answer is
//! the chat generator's output as JSON in `haystack.agent.step.llm.output`: its `replies`,
//! each with `meta` (`model`, `finish_reason`, `usage` in the OpenAI SDK's names) and its
//! `content` (`tool_call`s with their ids). A failed tool says `haystack.tool.error`.

use serde_json::{json, Value};

use super::Op;
use crate::import::otlp::attributes::Attrs;

/// Where a model call's answer is.
const LLM_OUTPUT: &str = "haystack.agent.step.llm.output";

/// A tool span's failure flag.
pub(super) const TOOL_ERROR: &str = "haystack.tool.error";

/// What a Haystack span is, by its name.
pub(super) fn op(name: &str) -> Option<Op> {
    match name {
        "haystack.agent.run" => Some(Op::Agent),
        "haystack.agent.step.llm" => Some(Op::Inference),
        "haystack.agent.step.tool" => Some(Op::Tool),
        _ => None,
    }
}

/// The replies of a model call's answer, when the span has one.
fn replies(attrs: &Attrs) -> Vec<Value> {
    let Some(text) = attrs.str(LLM_OUTPUT) else {
        return Vec::new();
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(mut o)) => match o.remove("replies") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Each reply's `meta.finish_reason`.
pub(super) fn finish_reasons(attrs: &Attrs) -> Vec<String> {
    replies(attrs)
        .iter()
        .filter_map(|r| r["meta"]["finish_reason"].as_str())
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect()
}

/// The first reply's `meta.model`.
pub(super) fn model(attrs: &Attrs) -> Option<String> {
    replies(attrs)
        .iter()
        .find_map(|r| r["meta"]["model"].as_str().map(str::to_string))
}

/// The usage the replies' `meta.usage` state (the OpenAI SDK's names; several replies of one
/// call carry the same usage, so the first is taken).
pub(super) fn usage(attrs: &Attrs) -> Option<Value> {
    let replies = replies(attrs);
    let u = replies
        .iter()
        .map(|r| &r["meta"]["usage"])
        .find(|u| u.is_object())?;
    let n = |v: &Value| v.as_u64().unwrap_or(0).min(1 << 53);
    let input = n(&u["prompt_tokens"]);
    let output = n(&u["completion_tokens"]);
    Some(json!({
        "input_tokens": input,
        "output_tokens": output,
        "total_tokens": input + output,
        "cached_input_tokens": n(&u["prompt_tokens_details"]["cached_tokens"]),
        "cache_write_tokens": 0,
        "reasoning_tokens": n(&u["completion_tokens_details"]["reasoning_tokens"]),
    }))
}

/// The tool calls the replies ask for: (name, id), in order.
pub(super) fn tool_calls(attrs: &Attrs) -> Vec<(String, String)> {
    replies(attrs)
        .iter()
        .filter_map(|r| r["content"].as_array())
        .flatten()
        .filter_map(|c| {
            let call = &c["tool_call"];
            let (name, id) = (call["tool_name"].as_str()?, call["id"].as_str()?);
            Some((name.to_string(), id.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(output: &str) -> Attrs {
        let members = [(LLM_OUTPUT, Value::String(output.to_string()).to_string())];
        Attrs::build(&members).unwrap()
    }

    #[test]
    fn the_answer_gives_reasons_model_usage_and_calls() {
        let a = attrs(
            r#"{"replies": [{"role": "assistant", "meta": {"model": "m1", "finish_reason": "length",
            "usage": {"prompt_tokens": 50, "completion_tokens": 64,
            "prompt_tokens_details": {"cached_tokens": 8}, "completion_tokens_details": null}},
            "content": [{"tool_call": {"tool_name": "get_weather", "id": "call_1"}}]}]}"#,
        );
        assert_eq!(finish_reasons(&a), ["length"]);
        assert_eq!(model(&a).as_deref(), Some("m1"));
        let u = usage(&a).unwrap();
        assert_eq!(
            (u["input_tokens"].as_u64(), u["output_tokens"].as_u64()),
            (Some(50), Some(64))
        );
        assert_eq!(u["cached_input_tokens"], 8);
        assert_eq!(
            tool_calls(&a),
            [("get_weather".to_string(), "call_1".to_string())]
        );
    }

    #[test]
    fn no_answer_gives_nothing() {
        let a = attrs("not json");
        assert!(finish_reasons(&a).is_empty() && usage(&a).is_none() && tool_calls(&a).is_empty());
    }
}
