//! The shape of Codex CLI rollouts written before the `{timestamp, type, payload}` envelope
//! (codex-rs `rollout.rs` of mid-2025): a first line `{id, timestamp, instructions?, git?}`
//! (the session header), then bare response items (`message`, `reasoning`, `function_call`,
//! `function_call_output`, `local_shell_call`, …) and `{"record_type":"state", …}` snapshots,
//! none of them timestamped. This module only recognises those records; the Codex importer
//! (codex.rs) maps them with the same code as the wrapped `response_item`s.

use serde_json::{Map, Value};

/// Keys the session header may carry (`SessionMeta` + the `git` block added beside it).
const HEADER_KEYS: [&str; 4] = ["id", "timestamp", "instructions", "git"];

/// The session header: `id` and `timestamp` strings, no `type`, no other key.
pub fn is_header(o: &Map<String, Value>) -> bool {
    o.get("id").is_some_and(Value::is_string)
        && o.get("timestamp").is_some_and(Value::is_string)
        && o.keys().all(|k| HEADER_KEYS.contains(&k.as_str()))
}

/// A session-state snapshot line: `record_type: "state"` and no `type`.
pub fn is_state(o: &Map<String, Value>) -> bool {
    o.get("record_type").and_then(Value::as_str) == Some("state") && !o.contains_key("type")
}

/// A bare response item (the `payload` of a current rollout's `response_item`).
pub fn is_response_item(ty: &str) -> bool {
    matches!(ty, "message" | "reasoning") || ty.ends_with("_call") || ty.ends_with("_call_output")
}

/// Whether a `role: user` message is context Codex sent with the session rather than a
/// prompt typed by the user: its text opens with `<user_instructions>` or
/// `<environment_context>` (the AGENTS.md text and the cwd/sandbox block).
pub fn is_context_message(item: &Map<String, Value>) -> bool {
    let text = item
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .next()
        .unwrap_or("");
    let text = text.trim_start();
    text.starts_with("<user_instructions>") || text.starts_with("<environment_context>")
}

/// The non-zero `metadata.exit_code` of a `function_call_output` whose `output` is the
/// JSON text `{"output": …, "metadata": {"exit_code", "duration_seconds"}}` (shell calls).
pub fn failed_exit_code(item: &Map<String, Value>) -> Option<i64> {
    let code = |v: &Value| v.pointer("/metadata/exit_code").and_then(Value::as_i64);
    let code = match item.get("output")? {
        Value::String(text) => code(&serde_json::from_str::<Value>(text).ok()?),
        v => code(v),
    }?;
    (code != 0).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn header_and_state_shapes() {
        assert!(is_header(&obj(
            json!({"id":"a","timestamp":"2025-09-10T18:58:38.331Z","instructions":"x","git":{}})
        )));
        assert!(!is_header(&obj(
            json!({"id":"a","timestamp":"t","type":"message"})
        )));
        assert!(!is_header(&obj(json!({"id":"a","timestamp":"t","seq":1}))));
        assert!(is_state(&obj(json!({"record_type":"state"}))));
        assert!(!is_state(&obj(json!({"record_type":"state","type":"x"}))));
        assert!(is_context_message(&obj(
            json!({"content":[{"type":"input_text","text":"<environment_context>\n<cwd>/</cwd>"}]})
        )));
        let out = |o: &str| obj(json!({ "type": "function_call_output", "output": o }));
        assert_eq!(
            failed_exit_code(&out(r#"{"output":"x","metadata":{"exit_code":2}}"#)),
            Some(2)
        );
        assert_eq!(
            failed_exit_code(&out(r#"{"output":"x","metadata":{"exit_code":0}}"#)),
            None
        );
        assert_eq!(failed_exit_code(&out("Plan updated")), None);
        assert!(!is_context_message(&obj(
            json!({"content":[{"type":"input_text","text":"fix the build"}]})
        )));
    }
}
