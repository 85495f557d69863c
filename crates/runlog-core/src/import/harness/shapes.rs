//! The three shapes a harness file records: the persisted log's header and events, JSON-RPC
//! captures and headless stream captures, each routed to the session it belongs to.

use serde_json::{json, Map, Value};

use super::fields::{native_seq, packed_len, session_end_status, sibling_parent};
use super::{HarnessImporter, NativeRecord, SeqBase};
use crate::event::Event;
use crate::import::is_placeholder;

impl HarnessImporter {
    pub(super) fn header(&mut self, rec: &Map<String, Value>, out: &mut Vec<Event>) {
        let id = match rec.get("id").and_then(Value::as_str) {
            Some(s) if !is_placeholder(Some(s)) => s.to_string(),
            _ => self.rel.clone(),
        };
        let parent = match rec.get("parentSession") {
            Some(Value::String(p)) if !is_placeholder(Some(p)) => Some(p.clone()),
            Some(_) => sibling_parent(&self.rel),
            None if rec.get("origin").and_then(Value::as_str) == Some("subagent") => {
                sibling_parent(&self.rel)
            }
            None => None,
        };
        let root = parent.clone().unwrap_or_else(|| id.clone());
        self.session(&id).root = root;
        self.file_session = Some(id.clone());
        let seq = self.alloc(0);
        let created = rec.get("createdAt").and_then(Value::as_i64);
        // Stripped event times count from the file's creation.
        let ts = self.ts(created, seq);
        let mut data = json!({ "parent": parent, "parent_turn": Value::Null });
        if let Value::Object(m) = &mut data {
            for k in ["origin", "delegationDepth", "cwd"] {
                if let Some(v) = rec.get(k) {
                    m.insert(k.to_string(), v.clone());
                }
            }
        }
        self.push(out, seq, ts, &id, None, "session/start", data);
    }

    pub(super) fn persisted(
        &mut self,
        rec: Map<String, Value>,
        out: &mut Vec<Event>,
    ) -> Result<(), String> {
        let explicit = rec.get("seq").and_then(native_seq);
        if let Some(NativeRecord {
            line,
            record: first,
            events,
        }) = explicit.and_then(|n| self.by_native.get(&n))
        {
            if *first != rec {
                return Err(format!(
                    "conflicts with the record kept from line {line} (same native seq {}, \
                     different content)",
                    explicit.unwrap_or_default()
                ));
            }
            // The same record again: the same events, which ingest counts as duplicates.
            out.extend(events.iter().cloned().map(|mut ev| {
                ev.line = 0;
                ev
            }));
            return Ok(());
        }
        let before = out.len();
        let kept = explicit.map(|n| (n, rec.clone()));
        let session = self
            .file_session
            .clone()
            .unwrap_or_else(|| self.rel.clone());
        self.session(&session);
        let native = rec.get("seq").and_then(native_seq).or_else(|| {
            rec.get("seq0")
                .or_else(|| rec.get("data").and_then(|d| d.get("seq0")))
                .and_then(native_seq)
        });
        let n0 = native.unwrap_or(self.native_next);
        let span = packed_len(&rec).unwrap_or(1).max(1) as u64;
        self.native_next = n0.saturating_add(span);
        let base = SeqBase {
            min: n0.saturating_add(1),
            native,
        };
        self.harness_event(&session, rec, base, out);
        if let Some((n, rec)) = kept {
            let events = out[before..].to_vec();
            let line = self.line_no;
            self.by_native.insert(
                n,
                NativeRecord {
                    line,
                    record: rec,
                    events,
                },
            );
        }
        Ok(())
    }

    pub(super) fn jsonrpc(
        &mut self,
        line_no: u64,
        method: &str,
        mut rec: Map<String, Value>,
        out: &mut Vec<Event>,
    ) {
        let base = SeqBase {
            min: line_no.saturating_sub(1),
            native: None,
        };
        if method == "session.event" {
            let params = rec.get_mut("params").and_then(Value::as_object_mut);
            let sid = params
                .as_ref()
                .and_then(|p| p.get("sessionId"))
                .and_then(Value::as_str)
                .map(str::to_string);
            match params.and_then(|p| p.remove("event")) {
                Some(Value::Object(ev)) => {
                    let native = ev.get("seq").and_then(native_seq);
                    let session = self.capture_session(sid.as_deref(), native);
                    self.harness_event(&session, ev, SeqBase { native, ..base }, out);
                }
                other => {
                    if let (Some(v), Some(p)) =
                        (other, rec.get_mut("params").and_then(Value::as_object_mut))
                    {
                        p.insert("event".into(), v);
                    }
                    let s = self.capture_session(sid.as_deref(), None);
                    self.keep(out, base, None, &s, method, rec);
                }
            }
            return;
        }
        let params = rec.get("params").and_then(Value::as_object);
        let sid = params
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str);
        match method {
            "session.status" => {
                let session = self.capture_session(sid, None);
                let status = params.and_then(|p| p.get("status")).and_then(Value::as_str);
                if status == Some("idle") && self.root_of(&session) == session {
                    self.release_held(out);
                    let seq = self.alloc(base.min);
                    let ts = self.ts(None, seq);
                    self.push(out, seq, ts, &session, None, "agent/idle", json!({}));
                } else {
                    self.keep(out, base, None, &session, method, rec);
                }
            }
            "subagent.started" => {
                let p = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
                let parent = self.capture_session(p("parentSessionId"), None);
                let child = match p("childSessionId") {
                    Some(c) if !is_placeholder(Some(c)) => c.to_string(),
                    _ => {
                        self.children += 1;
                        let c = format!("{}#{}", self.rel, self.children);
                        self.stack.push(c.clone());
                        c
                    }
                };
                let root = self.root_of(&parent);
                let parent_turn = self.open_turn(&parent);
                let s = self.session(&child);
                s.root = root;
                s.expect_seq = 0;
                let mut data = json!({ "parent": parent, "parent_turn": parent_turn });
                if let (Value::Object(m), Some(pm)) = (&mut data, params) {
                    for k in ["provider", "agentId", "label"] {
                        if let Some(v) = pm.get(k) {
                            m.insert(k.to_string(), v.clone());
                        }
                    }
                }
                let seq = self.alloc(base.min);
                let ts = self.ts(None, seq);
                self.push(out, seq, ts, &child, None, "session/start", data);
            }
            "subagent.finished" => {
                let p = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
                let child = match p("childSessionId") {
                    Some(c) if !is_placeholder(Some(c)) => Some(c.to_string()),
                    _ if self.stack.len() > 1 => self.stack.last().cloned(),
                    _ => None,
                };
                let Some(child) = child else {
                    let s = self.capture_session(sid, None);
                    return self.keep(out, base, None, &s, method, rec);
                };
                self.session(&child);
                let stop = p("stopReason");
                let status = session_end_status(stop.or(p("status")));
                self.stack.retain(|s| *s != child);
                let data = json!({
                    "status": status,
                    "stop_reason": stop,
                    "result_status": p("status"),
                });
                let seq = self.alloc(base.min);
                let ts = self.ts(None, seq);
                self.push(out, seq, ts, &child, None, "session/end", data);
            }
            _ => {
                let s = self.capture_session(sid, None);
                self.keep(out, base, None, &s, method, rec);
            }
        }
    }

    pub(super) fn headless(
        &mut self,
        line_no: u64,
        ty: &str,
        mut rec: Map<String, Value>,
        out: &mut Vec<Event>,
    ) {
        let base = SeqBase {
            min: line_no.saturating_sub(1),
            native: None,
        };
        let sid = rec
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string);
        let sid = sid.as_deref();
        if ty == "session_event" && rec.get("event").is_some_and(Value::is_object) {
            if let Some(Value::Object(ev)) = rec.remove("event") {
                let native = ev.get("seq").and_then(native_seq);
                let session = self.capture_session(sid, native);
                self.harness_event(&session, ev, SeqBase { native, ..base }, out);
            }
            return;
        }
        match ty {
            "result" => {
                let session = self.capture_session(sid, None);
                if self.root_of(&session) != session {
                    return self.keep(out, base, None, &session, ty, rec);
                }
                self.release_held(out);
                let mut data = json!({ "synthetic": true });
                if let Value::Object(m) = &mut data {
                    for k in ["output", "usage"] {
                        if let Some(v) = rec.get(k) {
                            m.insert(k.to_string(), v.clone());
                        }
                    }
                }
                let seq = self.alloc(base.min);
                let ts = self.ts(None, seq);
                self.push(out, seq, ts, &session, None, "agent/idle", data);
            }
            _ => {
                let session = self.capture_session(sid, None);
                self.keep(out, base, None, &session, ty, rec);
            }
        }
    }
}
