//! One harness event (a persisted record or a captured `event`) mapped onto canonical events:
//! turns, model calls (a failed call held until its retry shows), deltas, tools, approvals.

use serde_json::{json, Map, Value};

use super::fields::{
    failure_error, harness_usage, message_text, model_end, piece_times, text_data, turn_id,
    with_src_seq,
};
use super::{HarnessImporter, HeldError, SeqBase, SRC};
use crate::event::Event;
use crate::import::{event, flag, is_placeholder, unmapped};

impl HarnessImporter {
    pub(super) fn harness_event(
        &mut self,
        session: &str,
        ev: Map<String, Value>,
        base: SeqBase,
        out: &mut Vec<Event>,
    ) {
        let ty = ev
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("record")
            .to_string();
        let time = ev.get("time").and_then(Value::as_i64);
        let empty = Map::new();
        let data = ev.get("data").and_then(Value::as_object).unwrap_or(&empty);
        let turn = turn_id(data.get("turn")).or_else(|| self.open_turn(session));

        self.settle_held(session, &ty, data, out);

        let mapped: Option<(&str, Value)> = match ty.as_str() {
            "agent/inbox/spliced" => {
                if self.receipts(session, data, time, base, out) {
                    return;
                }
                None
            }
            "turn/start" => turn.as_ref().map(|t| {
                self.session(session).open_turn = Some(t.clone());
                let mut d = json!({});
                if let (Value::Object(m), Some(tr)) = (&mut d, data.get("trigger")) {
                    m.insert("trigger".into(), tr.clone());
                }
                ("turn/start", d)
            }),
            "turn/end" => Some(("turn/end", self.turn_end(session, turn.as_deref(), data))),
            "assistant/chunk" => {
                let chunk = data
                    .get("chunk")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                match chunk.get("type").and_then(Value::as_str) {
                    Some("text-delta") => Some(("text/delta", text_data(chunk.get("text")))),
                    Some("reasoning-delta") => {
                        Some(("reasoning/delta", text_data(chunk.get("text"))))
                    }
                    Some("usage") => {
                        self.session(session).usage = chunk.get("usage").map(harness_usage);
                        None
                    }
                    Some("finish") => {
                        let usage = self.session(session).usage.take();
                        let (d, failed) = model_end(chunk, usage);
                        if failed {
                            let step = data.get("step").cloned();
                            self.release_held(out);
                            self.hold_error(d, session, turn.clone(), step, time, base);
                            return;
                        }
                        Some(("model/end", d))
                    }
                    _ => None,
                }
            }
            "text-chunks" | "reasoning-chunks" => {
                if self.packed_deltas(&ty, &ev, data, session, turn.as_deref(), base, out) {
                    return;
                }
                None
            }
            "tool-call-chunks" => {
                if self.packed_tool_calls(&ev, data, session, turn.as_deref(), base, out) {
                    return;
                }
                None
            }
            "assistant/message" => {
                let text = message_text(data);
                if let (Some(t), false) = (&turn, text.is_empty()) {
                    self.session(session).last_text.insert(t.clone(), text);
                }
                None
            }
            "tool/call" => tool_call(data),
            "tool/result" => Some(("tool/result", self.tool_result(data))),
            "approval/asked" => self.approval_asked(session, data),
            "approval/decided" => self.approval_decided(session, data),
            _ => None,
        };

        match mapped {
            Some((kind, d)) => {
                let d = with_src_seq(d, base.native);
                let seq = self.alloc(base.min);
                let ts = self.ts(time, seq);
                self.push(out, seq, ts, session, turn.as_deref(), kind, d);
                if kind == "turn/end" {
                    let s = self.session(session);
                    if s.open_turn == turn {
                        s.open_turn = None;
                    }
                }
            }
            None => self.keep(out, base, time, session, &ty, ev),
        }
    }

    /// A packed `text-chunks` / `reasoning-chunks` row: one delta per piece, one seq each.
    /// False when it has no `texts` (kept unmapped).
    #[allow(clippy::too_many_arguments)]
    fn packed_deltas(
        &mut self,
        ty: &str,
        ev: &Map<String, Value>,
        data: &Map<String, Value>,
        session: &str,
        turn: Option<&str>,
        base: SeqBase,
        out: &mut Vec<Event>,
    ) -> bool {
        let kind = if ty == "text-chunks" {
            "text/delta"
        } else {
            "reasoning/delta"
        };
        if let Some(texts) = data.get("texts").and_then(Value::as_array) {
            let times = piece_times(ev, data, texts.len());
            for (i, t) in texts.iter().enumerate() {
                let d = with_src_seq(
                    text_data(Some(t)),
                    base.native.map(|n| n.saturating_add(i as u64)),
                );
                let seq = self.alloc(base.min.saturating_add(i as u64));
                let ts = self.ts(times.as_ref().map(|v| v[i]), seq);
                self.push(out, seq, ts, session, turn, kind, d);
            }
            return true;
        }
        false
    }

    /// A packed `tool-call-chunks` row: one `harness:assistant/chunk` per piece, one seq each.
    /// False when it has no `args` (kept unmapped).
    fn packed_tool_calls(
        &mut self,
        ev: &Map<String, Value>,
        data: &Map<String, Value>,
        session: &str,
        turn: Option<&str>,
        base: SeqBase,
        out: &mut Vec<Event>,
    ) -> bool {
        if let Some(args) = data.get("args").and_then(Value::as_array) {
            // Unpacked into the `tool-call-delta` chunks they were recorded from.
            let times = piece_times(ev, data, args.len());
            for (i, a) in args.iter().enumerate() {
                let mut chunk = Map::new();
                chunk.insert("type".into(), "tool-call-delta".into());
                for k in ["index", "id", "name"] {
                    if let Some(v) = data.get(k) {
                        chunk.insert(k.into(), v.clone());
                    }
                }
                chunk.insert("argumentsDelta".into(), a.clone());
                let d = json!({
                    "type": "assistant/chunk",
                    "data": { "turn": data.get("turn"), "step": data.get("step"), "chunk": chunk },
                    "unpacked_from": "tool-call-chunks",
                });
                let d = with_src_seq(d, base.native.map(|n| n.saturating_add(i as u64)));
                let seq = self.alloc(base.min.saturating_add(i as u64));
                let ts = self.ts(times.as_ref().map(|v| v[i]), seq);
                let kind = unmapped(SRC, "assistant/chunk");
                self.push(out, seq, ts, session, turn, &kind, d);
            }
            return true;
        }
        false
    }

    /// `approval/asked` → `callback/open` (a placeholder id named by the file and seq).
    fn approval_asked(
        &mut self,
        session: &str,
        data: &Map<String, Value>,
    ) -> Option<(&'static str, Value)> {
        let call_id = data
            .get("callId")
            .and_then(Value::as_str)
            .map(str::to_string);
        let id = match data.get("id").and_then(Value::as_str) {
            Some(id) if !is_placeholder(Some(id)) => id.to_string(),
            _ => {
                let id = format!("{}:approval:{}", self.rel, self.next_seq);
                self.unnamed_approvals
                    .push((session.to_string(), id.clone()));
                id
            }
        };
        self.approvals
            .insert(id.clone(), (session.to_string(), call_id));
        Some((
            "callback/open",
            json!({
                "callback_id": id,
                "kind": "approval",
                "title": data.get("reason"),
                "request": { "toolName": data.get("toolName"), "callId": data.get("callId") },
            }),
        ))
    }

    /// `approval/decided` → `callback/answer`; a rejection marks the tool call rejected.
    fn approval_decided(
        &mut self,
        session: &str,
        data: &Map<String, Value>,
    ) -> Option<(&'static str, Value)> {
        let id = match data.get("id").and_then(Value::as_str) {
            Some(id) if !is_placeholder(Some(id)) => Some(id.to_string()),
            _ => self
                .unnamed_approvals
                .iter()
                .rposition(|(s, _)| s == session)
                .map(|i| self.unnamed_approvals.remove(i).1),
        };
        id.map(|id| {
            let outcome = data.get("outcome").and_then(Value::as_str);
            if outcome == Some("rejected") {
                if let Some((_, Some(call))) = self.approvals.get(&id) {
                    self.rejected_calls.insert(call.clone());
                }
            }
            (
                "callback/answer",
                json!({ "callback_id": id, "outcome": outcome }),
            )
        })
    }

    /// A held model error learns here whether it is retried: an `llm/retry` of the same turn
    /// and step makes it retryable; either that or a record of `RELEASES_HELD` releases it.
    fn settle_held(
        &mut self,
        session: &str,
        ty: &str,
        data: &Map<String, Value>,
        out: &mut Vec<Event>,
    ) {
        if self.held.as_ref().is_some_and(|h| h.session == session) {
            if ty == "llm/retry" {
                let same = self.held.as_ref().is_some_and(|h| {
                    h.turn == turn_id(data.get("turn"))
                        && (h.step.is_none()
                            || data.get("step").is_none()
                            || h.step.as_ref() == data.get("step"))
                });
                if same {
                    if let Some(h) = &mut self.held {
                        if let Some(e) = h.data.get_mut("error").and_then(Value::as_object_mut) {
                            e.insert("retryable".into(), Value::Bool(true));
                        }
                    }
                }
                self.release_held(out);
            } else if RELEASES_HELD.contains(&ty) {
                self.release_held(out);
            }
        }
    }

    /// Holds a failed call's `model/end` until the session's next record tells whether it is
    /// retried (`settle_held`).
    fn hold_error(
        &mut self,
        d: Value,
        session: &str,
        turn: Option<String>,
        step: Option<Value>,
        time: Option<i64>,
        base: SeqBase,
    ) {
        let d = with_src_seq(d, base.native);
        let seq = self.alloc(base.min);
        let ts = self.ts(time, seq);
        let mut data_v = d;
        if ts.1 {
            flag(&mut data_v, "ts_synthetic");
        }
        let mut ev = event(
            seq,
            ts.0,
            &self.root_of(session),
            session,
            turn.as_deref(),
            "model/end",
            json!({}),
        );
        ev.line = self.line_no;
        self.held = Some(HeldError {
            event: ev,
            data: data_v,
            session: session.to_string(),
            turn,
            step,
        });
    }

    /// `agent/inbox/spliced` with inserted messages: one `inbox/receipt` each. False when
    /// there is none (a claim: `removedCount` only), which is kept unmapped.
    fn receipts(
        &mut self,
        session: &str,
        data: &Map<String, Value>,
        time: Option<i64>,
        base: SeqBase,
        out: &mut Vec<Event>,
    ) -> bool {
        let Some(items) = data.get("inserted").and_then(Value::as_array) else {
            return false;
        };
        if items.is_empty() {
            return false;
        }
        let target = data.get("target").and_then(Value::as_str);
        for (i, item) in items.iter().enumerate() {
            let source = item
                .get("source")
                .and_then(|s| s.get("kind"))
                .and_then(Value::as_str);
            let kind = match (source, target) {
                (Some(k), _) if k != "user" => "context",
                (_, Some("next-step")) => "steer",
                _ => "prompt",
            };
            let seq = self.alloc(base.min.saturating_add(i as u64));
            let message_id = match item.get("id").and_then(Value::as_str) {
                Some(id) if !is_placeholder(Some(id)) => id.to_string(),
                _ => format!("{}:{}", self.rel, seq),
            };
            let d = with_src_seq(
                json!({ "message_id": message_id, "kind": kind, "target": target }),
                base.native,
            );
            let ts = self.ts(time, seq);
            self.push(out, seq, ts, session, None, "inbox/receipt", d);
        }
        true
    }

    fn turn_end(&self, session: &str, turn: Option<&str>, data: &Map<String, Value>) -> Value {
        let mut d = Map::new();
        match data.get("reason") {
            Some(Value::Object(r)) => {
                let mut r = r.clone();
                // Legacy apps/web: a disposed turn was aborted.
                if r.get("kind").and_then(Value::as_str) == Some("disposed") {
                    r.insert("kind".into(), "aborted".into());
                    r.insert("raw_kind".into(), "disposed".into());
                }
                if !r.get("cause").is_some_and(Value::is_string) {
                    if let Some(c) = r
                        .get("reason")
                        .and_then(|x| x.get("kind"))
                        .and_then(Value::as_str)
                    {
                        r.insert("cause".into(), c.into());
                    }
                }
                if let Some(Value::Object(e)) = r.get("error") {
                    let err = failure_error(e, false);
                    r.insert("error".into(), err);
                }
                d.insert("reason".into(), Value::Object(r));
            }
            Some(other) => {
                d.insert("reason".into(), other.clone());
            }
            None => {}
        }
        if let Some(text) =
            turn.and_then(|t| self.sessions.get(session).and_then(|s| s.last_text.get(t)))
        {
            d.insert("text".into(), Value::String(text.clone()));
        }
        Value::Object(d)
    }

    fn tool_result(&self, data: &Map<String, Value>) -> Value {
        let msg = data.get("message");
        let first = msg
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let call_id = data
            .get("callId")
            .or_else(|| {
                msg.and_then(|m| m.get("source"))
                    .and_then(|s| s.get("callId"))
            })
            .or_else(|| first.and_then(|f| f.get("toolCallId")))
            .and_then(Value::as_str);
        let code = data
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str);
        let is_error = data
            .get("isError")
            .or_else(|| first.and_then(|f| f.get("isError")))
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || data.get("error").is_some_and(Value::is_object);
        let status = if !is_error {
            "ok"
        } else if code == Some("FS_SANDBOX_DENIED") {
            "denied"
        } else if call_id.is_some_and(|c| self.rejected_calls.contains(c)) {
            "rejected"
        } else {
            "error"
        };
        let mut d = json!({ "call_id": call_id, "status": status });
        if let (Value::Object(m), Some(c)) = (&mut d, code) {
            m.insert("detail".into(), c.into());
        }
        d
    }
}

/// `tool/call` (arguments parsed when a JSON string).
fn tool_call(data: &Map<String, Value>) -> Option<(&'static str, Value)> {
    let args = match data.get("arguments") {
        Some(Value::String(s)) => {
            serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(v) => v.clone(),
        None => Value::Null,
    };
    Some((
        "tool/call",
        json!({
            "call_id": data.get("callId"),
            "name": data.get("name"),
            "arguments": args,
        }),
    ))
}

/// Record types after which a held model error can no longer be followed by its retry.
const RELEASES_HELD: [&str; 11] = [
    "assistant/chunk",
    "text-chunks",
    "reasoning-chunks",
    "tool-call-chunks",
    "assistant/message",
    "step/start",
    "step/end",
    "turn/start",
    "turn/end",
    "tool/call",
    "tool/result",
];
