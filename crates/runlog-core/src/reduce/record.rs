//! The JSON view of a turn's state: the state record `runlog replay` prints for every
//! event and every snapshot (docs/semantics.md §3).

use serde_json::{json, Map, Value};

use super::*;

impl Reducer {
    /// The state record (docs/semantics.md §3) of a turn as of the current cursor,
    /// or as of `cursor` when given. A turn whose end was malformed has `state: null`.
    /// Texts, outputs and tool calls are those a reducer made with `keep_detail` keeps.
    pub fn state_record(&self, id: TurnId, cursor: Option<u64>) -> Value {
        debug_assert!(
            self.keep_detail,
            "state records need a reducer that keeps details"
        );
        let t = &self.turns[id.0];
        let cursor = cursor.or(self.last_seq).unwrap_or(0).to_string();
        let mut rec = Map::new();
        let deltas = || Value::String(t.delta_text.clone());
        let opt = |s: &Option<String>| s.clone().map_or(Value::Null, Value::String);
        let opt_data = |s: &Option<Data>| {
            s.as_deref()
                .map_or(Value::Null, |s| Value::String(s.into()))
        };
        let state: Value;
        match &t.end {
            None if t.open_callbacks.is_empty() => {
                state = json!("Running");
                rec.insert("text".into(), deltas());
            }
            None => {
                state = json!("Blocked");
                rec.insert("text".into(), deltas());
                let cbs: Vec<Value> = t
                    .open_callbacks
                    .iter()
                    .map(|&c| {
                        let cb = &self.callbacks[c];
                        json!({"id": cb.callback_id, "session_id": cb.session.as_str(),
                               "turn_id": cb.turn.as_deref(),
                               "kind": cb.kind, "title": cb.title})
                    })
                    .collect();
                rec.insert("callbacks".into(), Value::Array(cbs));
            }
            Some(TurnEnd::Completed {
                stop_reason,
                text,
                output,
            }) => {
                state = json!("Completed");
                rec.insert("text".into(), opt(text));
                rec.insert("stop_reason".into(), opt_data(stop_reason));
                rec.insert(
                    "output".into(),
                    output
                        .clone()
                        .unwrap_or_else(|| Value::String(text.clone().unwrap_or_default())),
                );
                let calls: Vec<Value> = t
                    .tool_calls
                    .iter()
                    .map(|&c| {
                        let tc = &self.tool_calls[c];
                        let args = tc
                            .arguments
                            .as_deref()
                            .and_then(|a| serde_json::from_str(a).ok())
                            .unwrap_or(Value::Null);
                        json!({"name": tc.name, "arguments": args})
                    })
                    .collect();
                rec.insert("tool_calls".into(), Value::Array(calls));
            }
            Some(TurnEnd::Interrupted { cause }) => {
                state = json!("Interrupted");
                rec.insert("text".into(), deltas());
                rec.insert("cause".into(), json!(cause));
            }
            Some(TurnEnd::Failed { error, text, .. }) => {
                state = json!("Failed");
                rec.insert("text".into(), opt(text));
                let error = error.as_deref().map(Raw);
                let f = error_fields(error);
                let details = error.and_then(|e| e.get("details"));
                rec.insert(
                    "error".into(),
                    json!({"code": f.code, "message": f.message, "retryable": f.retryable,
                           "details": details.map_or(Value::Null, Raw::to_value)}),
                );
            }
            Some(TurnEnd::Unknown { outcome, raw, text }) => {
                state = json!("UnknownOutcome");
                rec.insert("text".into(), opt(text));
                rec.insert("outcome".into(), json!(outcome));
                let raw = raw.as_deref().map_or(Value::Null, |r| Raw(r).to_value());
                rec.insert("raw".into(), raw);
            }
            Some(TurnEnd::Malformed) => {
                state = Value::Null;
                rec.insert("text".into(), Value::Null);
                rec.insert(
                    "protocol_error".into(),
                    json!(t.end_seq.map(|s| s.to_string())),
                );
            }
        }
        let mut out = Map::new();
        out.insert("state".into(), state);
        out.insert("session_id".into(), json!(t.session.as_str()));
        out.insert("turn_id".into(), json!(t.turn.as_str()));
        out.insert("cursor".into(), json!(cursor));
        out.extend(rec);
        Value::Object(out)
    }
}
