//! The deepseek-harness importer (docs/importers/harness.md).
//!
//! Reads the three shapes the harness records, each line one JSON object:
//! - persisted logs (`session.jsonl`): a `{"type":"session","version","id",…}` header, then
//!   events `{type, seq?, time?, data}`; the test kit strips `seq`/`time`, packs streamed
//!   chunks into `text-chunks` / `reasoning-chunks` / `tool-call-chunks` rows
//!   (`texts`/`args` + `dt`), and the legacy apps/web shape has no inbox splices and keeps
//!   `content`/`isError` at the top of `data`. A subagent's log is its own file whose header
//!   names `parentSession` (`session.N.jsonl` beside the parent's `session.jsonl`);
//! - JSON-RPC captures: `{"method":"session.event"|"session.status"|"subagent.started"|
//!   "subagent.finished","params"}`, the parent's and children's events in one file;
//! - headless stream captures: `{"type":"session_event","sessionId","event"}` … `{"type":"result"}`.
//!
//! It maps them onto canonical events: header / `subagent.started` → `session/start`,
//! `subagent.finished` → `session/end`, inbox splices → `inbox/receipt`, the root's idle
//! status and the headless `result` → `agent/idle`, `turn/start` / `turn/end` (raw kind kept,
//! nested cause, table-E error, the turn's last assistant text), the `finish` chunk of every
//! model attempt → `model/end` (usage of the preceding usage chunk; an error is retryable iff an
//! `llm/retry` of that turn and step follows), text / reasoning deltas (packed rows unpacked),
//! `tool/call` / `tool/result` (ok, denied, rejected after a rejected approval, error) and
//! approvals → `callback/open` / `callback/answer`. Every other record is kept as
//! `harness:<type>` (`harness:<method>` for other JSON-RPC notifications).
//!
//! Seqs: a persisted log's header is seq 0 and each event its native seq + 1 (when stripped,
//! the event's ordinal, a packed row spanning one seq per piece); a capture's seq is its line
//! ordinal (parent and child seqs restart there), the native seq kept in `data.src_seq`.
//! A persisted record that repeats an earlier record's native `seq` is a duplicate when equal
//! to it (its events are yielded again, so ingest counts them as duplicates) and otherwise a
//! conflict: the first in line order is kept and the later line rejected with the reason
//! (docs/semantics.md §1), never renumbered.
//! Timestamps: `time` (ms) where recorded, else the file start (`createdAt`, else the epoch, or
//! the last recorded time) plus the seq in µs, flagged `ts_synthetic`.
//!
//! Ids scrubbed to `{{…}}` placeholders stand for the file's `rel` path. In captures parent
//! and child then look alike: a child announced by `subagent.started` is named `<rel>#<n>`,
//! and each placeholder event goes to the active session whose native seq it continues (else
//! the most recently started one).

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::{
    error_object, event, flag, is_placeholder, unmapped, usage_disjoint, FileContext, Format,
    Importer, Unmapped,
};
use crate::event::{Event, PayloadIndex};

const SRC: Format = Format::Harness;

/// What the importer knows of one session of the file.
#[derive(Default)]
struct Session {
    /// The root session of its tree (itself for a root).
    root: String,
    /// The turn between its `turn/start` and `turn/end`.
    open_turn: Option<String>,
    /// The last non-empty text of an `assistant/message`, per turn.
    last_text: HashMap<String, String>,
    /// The usage chunk waiting for its model call's `finish` chunk.
    usage: Option<Value>,
    /// The native seq its next event should carry (captures: tells scrubbed sessions apart).
    expect_seq: u64,
}

/// A `model/end` with an error, held until the session's next record tells whether an
/// `llm/retry` of the same turn and step follows (which makes the error retryable).
struct HeldError {
    event: Event,
    data: Value,
    session: String,
    turn: Option<String>,
    step: Option<Value>,
}

/// Where one record's seqs come from: the least canonical seq its first event may take, and
/// the native seq it carries (kept in `data.src_seq`).
#[derive(Clone, Copy)]
struct SeqBase {
    min: u64,
    native: Option<u64>,
}

pub struct HarnessImporter {
    rel: String,
    /// The next canonical seq (seqs only grow within a file).
    next_seq: u64,
    /// Persisted logs: the native seq of the next event when `seq` is stripped.
    native_next: u64,
    /// The last recorded time (µs) and the seq it was recorded at; synthetic timestamps
    /// count µs from there.
    anchor: (i64, u64),
    /// Persisted logs: the session the header names.
    file_session: Option<String>,
    sessions: HashMap<String, Session>,
    /// Captures: the sessions with placeholder ids still running, the root first.
    stack: Vec<String>,
    children: u32,
    /// Approval id → (session, tool call id).
    approvals: HashMap<String, (String, Option<String>)>,
    /// Placeholder approval ids, in asking order: (session, callback id), until answered.
    unnamed_approvals: Vec<(String, String)>,
    /// Tool calls whose approval was rejected.
    rejected_calls: HashSet<String>,
    held: Option<HeldError>,
    /// The line being read (a held event keeps the line it came from).
    line_no: u64,
    /// Persisted records with a native seq, by that seq.
    by_native: HashMap<u64, NativeRecord>,
}

/// A persisted record that carried its native seq: its line, the record and the events it
/// yielded (a later equal record yields them again; a different one is a conflict).
struct NativeRecord {
    line: u64,
    record: Map<String, Value>,
    events: Vec<Event>,
}

impl HarnessImporter {
    pub fn new(ctx: &FileContext) -> Self {
        HarnessImporter {
            rel: ctx.rel.clone(),
            next_seq: 0,
            native_next: 0,
            anchor: (0, 0),
            file_session: None,
            sessions: HashMap::new(),
            stack: Vec::new(),
            children: 0,
            approvals: HashMap::new(),
            unnamed_approvals: Vec::new(),
            rejected_calls: HashSet::new(),
            held: None,
            line_no: 0,
            by_native: HashMap::new(),
        }
    }

    // ----- seqs, timestamps, sessions -------------------------------------------------

    fn alloc(&mut self, min: u64) -> u64 {
        let s = self.next_seq.max(min);
        self.next_seq = s.saturating_add(1);
        s
    }

    /// The timestamp of an event at `seq`: `time_ms` when recorded (not 0), else synthetic.
    fn ts(&mut self, time_ms: Option<i64>, seq: u64) -> (i64, bool) {
        match time_ms {
            Some(t) if t != 0 => {
                let us = t.saturating_mul(1000);
                self.anchor = (us, seq);
                (us, false)
            }
            _ => {
                let (t, s) = self.anchor;
                (t.saturating_add(seq.saturating_sub(s) as i64), true)
            }
        }
    }

    fn session(&mut self, id: &str) -> &mut Session {
        self.sessions
            .entry(id.to_string())
            .or_insert_with(|| Session {
                root: id.to_string(),
                ..Session::default()
            })
    }

    fn root_of(&self, session: &str) -> String {
        self.sessions
            .get(session)
            .map_or_else(|| session.to_string(), |s| s.root.clone())
    }

    fn open_turn(&self, session: &str) -> Option<String> {
        self.sessions.get(session).and_then(|s| s.open_turn.clone())
    }

    /// The session a capture record belongs to. A placeholder id is resolved among the
    /// running placeholder sessions: the one whose native seq this record continues, else the
    /// most recently started one.
    fn capture_session(&mut self, id: Option<&str>, native: Option<u64>) -> String {
        let chosen = match id {
            Some(id) if !is_placeholder(Some(id)) => {
                self.session(id);
                id.to_string()
            }
            _ => {
                if self.stack.is_empty() {
                    let rel = self.rel.clone();
                    self.session(&rel);
                    self.stack.push(rel);
                }
                let by_seq = native.and_then(|n| {
                    self.stack
                        .iter()
                        .rev()
                        .find(|s| self.sessions.get(*s).is_some_and(|x| x.expect_seq == n))
                        .cloned()
                });
                by_seq.unwrap_or_else(|| self.stack[self.stack.len() - 1].clone())
            }
        };
        if let Some(n) = native {
            self.session(&chosen).expect_seq = n.saturating_add(1);
        }
        chosen
    }

    /// Pushes one canonical event (`line` 0: the line being read).
    #[allow(clippy::too_many_arguments)]
    fn push(
        &self,
        out: &mut Vec<Event>,
        seq: u64,
        ts: (i64, bool),
        session: &str,
        turn: Option<&str>,
        kind: &str,
        mut data: Value,
    ) {
        if ts.1 {
            flag(&mut data, "ts_synthetic");
        }
        out.push(event(
            seq,
            ts.0,
            &self.root_of(session),
            session,
            turn,
            kind,
            data,
        ));
    }

    /// Keeps a whole record of no mapping as `harness:<raw_type>`.
    fn keep(
        &mut self,
        out: &mut Vec<Event>,
        base: SeqBase,
        time: Option<i64>,
        session: &str,
        raw_type: &str,
        record: Map<String, Value>,
    ) {
        let turn = record
            .get("data")
            .and_then(Value::as_object)
            .and_then(|d| turn_id(d.get("turn")));
        let seq = self.alloc(base.min);
        let ts = self.ts(time, seq);
        self.push(
            out,
            seq,
            ts,
            session,
            turn.as_deref(),
            &unmapped(SRC, raw_type),
            Value::Object(record),
        );
    }

    fn release_held(&mut self, out: &mut Vec<Event>) {
        if let Some(h) = self.held.take() {
            let mut ev = h.event;
            ev.data = h.data.to_string().into();
            ev.index = PayloadIndex::of(&ev.kind, &ev.data);
            out.push(ev);
        }
    }

    // ----- the three shapes -------------------------------------------------------------

    fn header(&mut self, rec: &Map<String, Value>, out: &mut Vec<Event>) {
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

    fn persisted(&mut self, rec: Map<String, Value>, out: &mut Vec<Event>) -> Result<(), String> {
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

    fn jsonrpc(
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

    fn headless(
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

    // ----- one harness event (persisted record or captured `event`) ----------------------

    fn harness_event(
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

        // A held model error learns here whether it is retried.
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
            } else if RELEASES_HELD.contains(&ty.as_str()) {
                self.release_held(out);
            }
        }

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
                            self.release_held(out);
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
                                turn: turn.clone(),
                                step: data.get("step").cloned(),
                            });
                            return;
                        }
                        Some(("model/end", d))
                    }
                    _ => None,
                }
            }
            "text-chunks" | "reasoning-chunks" => {
                let kind = if ty == "text-chunks" {
                    "text/delta"
                } else {
                    "reasoning/delta"
                };
                if let Some(texts) = data.get("texts").and_then(Value::as_array) {
                    let times = piece_times(&ev, data, texts.len());
                    for (i, t) in texts.iter().enumerate() {
                        let d = with_src_seq(
                            text_data(Some(t)),
                            base.native.map(|n| n.saturating_add(i as u64)),
                        );
                        let seq = self.alloc(base.min.saturating_add(i as u64));
                        let ts = self.ts(times.as_ref().map(|v| v[i]), seq);
                        self.push(out, seq, ts, session, turn.as_deref(), kind, d);
                    }
                    return;
                }
                None
            }
            "tool-call-chunks" => {
                if let Some(args) = data.get("args").and_then(Value::as_array) {
                    // Unpacked into the `tool-call-delta` chunks they were recorded from.
                    let times = piece_times(&ev, data, args.len());
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
                        self.push(out, seq, ts, session, turn.as_deref(), &kind, d);
                    }
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
            "tool/call" => {
                let args = match data.get("arguments") {
                    Some(Value::String(s)) => serde_json::from_str::<Value>(s)
                        .unwrap_or_else(|_| Value::String(s.clone())),
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
            "tool/result" => Some(("tool/result", self.tool_result(data))),
            "approval/asked" => {
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
            "approval/decided" => {
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

impl Importer for HarnessImporter {
    fn line(&mut self, line_no: u64, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let rec = Unmapped::parse(line)?;
        self.line_no = line_no;
        if let Some(method) = rec.get("method").and_then(Value::as_str) {
            let method = method.to_string();
            self.jsonrpc(line_no, &method, rec, out);
            return Ok(());
        }
        let ty = rec.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "session" if rec.contains_key("id") && self.file_session.is_none() => {
                self.header(&rec, out);
            }
            "session_event" | "result" if rec.contains_key("sessionId") => {
                let ty = ty.to_string();
                self.headless(line_no, &ty, rec, out);
            }
            _ => self.persisted(rec, out)?,
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.release_held(out);
    }
}

// ----- helpers --------------------------------------------------------------------------

/// A native seq; absurd values (beyond 2^62, where canonical seqs end) count as missing.
fn native_seq(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n < 1 << 62)
}

/// `String(data.turn)`.
fn turn_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn text_data(text: Option<&Value>) -> Value {
    json!({ "text": text.and_then(Value::as_str).unwrap_or_default() })
}

fn with_src_seq(mut d: Value, native: Option<u64>) -> Value {
    if let (Value::Object(m), Some(n)) = (&mut d, native) {
        m.insert("src_seq".into(), n.into());
    }
    d
}

/// How many native seqs a packed `*-chunks` row spans.
fn packed_len(rec: &Map<String, Value>) -> Option<usize> {
    let ty = rec.get("type").and_then(Value::as_str)?;
    if !ty.ends_with("-chunks") {
        return None;
    }
    let d = rec.get("data")?;
    d.get("texts")
        .or_else(|| d.get("args"))
        .and_then(Value::as_array)
        .map(Vec::len)
}

/// The times (ms) of a packed row's pieces: `time0` plus the `dt` gaps between pieces; None
/// when `time0` is stripped.
fn piece_times(rec: &Map<String, Value>, data: &Map<String, Value>, n: usize) -> Option<Vec<i64>> {
    let t0 = rec
        .get("time0")
        .or_else(|| data.get("time0"))
        .or_else(|| rec.get("time"))
        .and_then(Value::as_i64)
        .filter(|t| *t != 0)?;
    let dt: Vec<i64> = data
        .get("dt")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_i64().unwrap_or(0)).collect())
        .unwrap_or_default();
    // `dt` has one gap per piece after the first (or, if as long as the pieces, one each).
    let shift = usize::from(dt.len() < n);
    let mut t = t0;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i >= shift {
            if let Some(d) = dt.get(i - shift) {
                t = t.saturating_add(*d).max(t);
            }
        }
        out.push(t);
    }
    Some(out)
}

/// Harness usage (disjoint cache counts) as canonical Usage.
fn harness_usage(u: &Value) -> Value {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut v = usage_disjoint(
        n("inputTokens"),
        n("cacheReadTokens"),
        n("cacheWriteTokens"),
        n("outputTokens"),
    );
    if let Value::Object(m) = &mut v {
        m.insert("reasoning_tokens".into(), n("reasoningTokens").into());
    }
    v
}

/// An `LlmFailure{message, code, status?, providerRetryAfterMs?, requestId?}` as an Error.
fn failure_error(f: &Map<String, Value>, retryable: bool) -> Value {
    let mut e = error_object(
        SRC,
        f.get("code").and_then(Value::as_str),
        f.get("message").and_then(Value::as_str).unwrap_or_default(),
        Some(retryable),
        f.get("status").and_then(Value::as_i64),
    );
    let extra: Vec<(&str, &Value)> = [
        ("providerRetryAfterMs", "retry_after_ms"),
        ("requestId", "request_id"),
    ]
    .into_iter()
    .filter_map(|(k, name)| f.get(k).map(|v| (name, v)))
    .collect();
    if !extra.is_empty() {
        if let Some(obj) = e.as_object_mut() {
            let details = obj.entry("details").or_insert(Value::Null);
            if !details.is_object() {
                *details = Value::Object(Map::new());
            }
            if let Some(dm) = details.as_object_mut() {
                for (k, v) in extra {
                    dm.insert(k.into(), v.clone());
                }
            }
        }
    }
    e
}

/// The `model/end` of a `finish` chunk, and whether it carries an error.
fn model_end(chunk: &Map<String, Value>, usage: Option<Value>) -> (Value, bool) {
    let reason = chunk.get("reason");
    let kind = reason.and_then(|r| r.get("kind")).and_then(Value::as_str);
    let mut d = Map::new();
    if let Some(k) = kind {
        d.insert("finish_reason".into(), k.into());
    }
    if let Some(u) = usage {
        d.insert("usage".into(), u);
    }
    let failure = reason
        .and_then(|r| r.get("failure"))
        .and_then(Value::as_object);
    let failed = match failure {
        Some(f) => {
            d.insert("error".into(), failure_error(f, false));
            true
        }
        None if kind == Some("error") => {
            d.insert(
                "error".into(),
                error_object(SRC, None, "model call failed", None, None),
            );
            true
        }
        None => false,
    };
    (Value::Object(d), failed)
}

/// The text parts of an `assistant/message` (`data.message.content`, legacy `data.content`).
fn message_text(data: &Map<String, Value>) -> String {
    let content = data
        .get("message")
        .and_then(|m| m.get("content"))
        .or_else(|| data.get("content"))
        .and_then(Value::as_array);
    let mut text = String::new();
    for part in content.into_iter().flatten() {
        if part.get("type").and_then(Value::as_str) == Some("text") {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
        }
    }
    text
}

/// `subagent.finished{stopReason}` to `session/end.status`.
fn session_end_status(stop: Option<&str>) -> &'static str {
    match stop {
        Some("completed" | "max-tokens" | "max_tokens" | "refusal" | "ok") => "closed",
        Some("aborted" | "cancelled") => "cancelled",
        _ => "failed",
    }
}

/// The parent of a subagent log whose header does not name it usably: `session.N.jsonl`
/// is the child of `session.jsonl` in the same folder, named by that file's path.
fn sibling_parent(rel: &str) -> Option<String> {
    let (dir, name) = match rel.rsplit_once('/') {
        Some((d, n)) => (Some(d), n),
        None => (None, rel),
    };
    let (num, ext) = name.strip_prefix("session.")?.split_once('.')?;
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let parent = format!("session.{ext}");
    Some(match dir {
        Some(d) => format!("{d}/{parent}"),
        None => parent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    fn run(rel: &str, lines: &[&str]) -> Vec<Event> {
        let (mut evs, rejected) = feed(&mut HarnessImporter::new(&context(rel)), lines);
        assert!(rejected.is_empty(), "lines rejected: {rejected:?}");
        evs.sort_by_key(|e| e.seq);
        evs
    }

    fn data(e: &Event) -> Value {
        serde_json::from_str(&e.data).unwrap()
    }

    #[test]
    fn stripped_persisted_seqs_count_packed_pieces() {
        let evs = run(
            "s/session.jsonl",
            &[
                r#"{"type":"session","version":0,"id":"{{sessionId}}","createdAt":5}"#,
                r#"{"type":"turn/start","data":{"turn":1}}"#,
                r#"{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}"#,
                r#"{"type":"tool-call-chunks","data":{"turn":1,"step":1,"index":1,"id":"c","name":"bash","args":["{","}"]}}"#,
                r#"{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}"#,
            ],
        );
        let kinds: Vec<(u64, &str)> = evs.iter().map(|e| (e.seq, e.kind.as_str())).collect();
        assert_eq!(
            kinds,
            [
                (0, "session/start"),
                (1, "turn/start"),
                (2, "text/delta"),
                (3, "text/delta"),
                (4, "harness:assistant/chunk"),
                (5, "harness:assistant/chunk"),
                (6, "turn/end"),
            ]
        );
        assert!(evs.iter().all(|e| e.root == "s/session.jsonl"));
        assert_eq!(evs[0].ts, 5000);
        assert_eq!(evs[6].ts, 5006);
        assert_eq!(data(&evs[6])["ts_synthetic"], true);
    }

    #[test]
    fn error_finish_is_retryable_only_when_a_retry_follows() {
        let fail = r#"{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"m","code":"RATE_LIMIT","status":429}}}}}"#;
        let retry = r#"{"type":"llm/retry","data":{"turn":1,"step":1,"retry":1}}"#;
        let end = r#"{"type":"step/end","data":{"turn":1,"step":1}}"#;
        let evs = run("a.jsonl", &[fail, retry]);
        let me = evs.iter().find(|e| e.kind == "model/end").unwrap();
        let d = data(me);
        assert_eq!(d["error"]["code"], "completion_rate_limited");
        assert_eq!(d["error"]["retryable"], true);
        assert_eq!(d["error"]["details"]["http_status"], 429);
        assert_eq!(me.seq, 1, "a headerless log: native seq 0 + 1");
        let evs = run("a.jsonl", &[fail, end]);
        let me = evs.iter().find(|e| e.kind == "model/end").unwrap();
        assert_eq!(data(me)["error"]["retryable"], false);
    }

    #[test]
    fn scrubbed_capture_ids_follow_subagent_start_and_native_seqs() {
        let ev = |seq: u64, ty: &str, d: &str| {
            format!(
                r#"{{"method":"session.event","params":{{"sessionId":"{{{{sessionId}}}}","event":{{"type":"{ty}","seq":{seq},"time":0,"data":{d}}}}}}}"#
            )
        };
        let lines = [
            ev(0, "turn/start", r#"{"turn":1}"#),
            r#"{"method":"subagent.started","params":{"parentSessionId":"{{sessionId}}","childSessionId":"{{sessionId}}"}}"#.to_string(),
            ev(0, "turn/start", r#"{"turn":1}"#),
            ev(1, "turn/end", r#"{"turn":1,"reason":{"kind":"max-tokens"}}"#),
            r#"{"method":"session.status","params":{"sessionId":"{{sessionId}}","status":"idle"}}"#.to_string(),
            r#"{"method":"subagent.finished","params":{"childSessionId":"{{sessionId}}","stopReason":"max-tokens"}}"#.to_string(),
            ev(1, "turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
            r#"{"method":"session.status","params":{"sessionId":"{{sessionId}}","status":"idle"}}"#.to_string(),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let evs = run("n.jsonl", &refs);
        let got: Vec<(&str, &str, &str)> = evs
            .iter()
            .map(|e| (e.session.as_str(), e.root.as_str(), e.kind.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("n.jsonl", "n.jsonl", "turn/start"),
                ("n.jsonl#1", "n.jsonl", "session/start"),
                ("n.jsonl#1", "n.jsonl", "turn/start"),
                ("n.jsonl#1", "n.jsonl", "turn/end"),
                ("n.jsonl#1", "n.jsonl", "harness:session.status"),
                ("n.jsonl#1", "n.jsonl", "session/end"),
                ("n.jsonl", "n.jsonl", "turn/end"),
                ("n.jsonl", "n.jsonl", "agent/idle"),
            ]
        );
        assert_eq!(data(&evs[1])["parent_turn"], "1");
        assert_eq!(data(&evs[5])["status"], "closed");
    }

    #[test]
    fn rejected_approval_rejects_the_tool_result() {
        let evs = run(
            "e.jsonl",
            &[
                r#"{"type":"turn/start","data":{"turn":1}}"#,
                r#"{"type":"tool/call","data":{"turn":1,"callId":"c1","name":"bash","arguments":"{\"x\":1}"}}"#,
                r#"{"type":"approval/asked","data":{"id":"a1","toolName":"bash","callId":"c1","reason":"why"}}"#,
                r#"{"type":"approval/decided","data":{"id":"a1","outcome":"rejected"}}"#,
                r#"{"type":"tool/result","data":{"turn":1,"message":{"source":{"callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":true}]}}}"#,
            ],
        );
        assert_eq!(data(&evs[1])["arguments"]["x"], 1);
        assert_eq!(evs[2].kind, "callback/open");
        assert_eq!(evs[2].turn.as_deref(), Some("1"));
        assert_eq!(evs[3].kind, "callback/answer");
        assert_eq!(data(&evs[4])["status"], "rejected");
    }

    #[test]
    fn sibling_parent_names_the_parent_file() {
        assert_eq!(
            sibling_parent("a/session.1.jsonl").as_deref(),
            Some("a/session.jsonl")
        );
        assert_eq!(
            sibling_parent("session.12.jsonl.gz").as_deref(),
            Some("session.jsonl.gz")
        );
        assert_eq!(sibling_parent("a/session.jsonl"), None);
        assert_eq!(sibling_parent("other.1.jsonl"), None);
    }
    #[test]
    fn odd_records_are_kept_never_panic() {
        let ctx = FileContext {
            file_idx: 0,
            name: "x".into(),
            rel: "x".into(),
        };
        let mut imp = HarnessImporter::new(&ctx);
        let mut out = Vec::new();
        let lines = [
            r#"{"type":"session","id":null,"createdAt":"soon","parentSession":7}"#,
            r#"{"type":"turn/start"}"#,
            r#"{"type":"turn/end","data":{"turn":{"x":1},"reason":"done"}}"#,
            r#"{"type":"assistant/chunk","data":"nope"}"#,
            r#"{"type":"assistant/chunk","data":{"chunk":{"type":"finish","reason":{"kind":"error"}}}}"#,
            r#"{"type":"text-chunks","seq":18446744073709551615,"data":{"texts":"a"}}"#,
            r#"{"type":"reasoning-chunks","seq0":18446744073709551614,"time0":-5,"data":{"texts":["a",1,null],"dt":[-9,"x"]}}"#,
            r#"{"type":"tool/result","data":{"message":{"content":"x"},"error":"boom"}}"#,
            r#"{"type":"approval/decided","data":{"id":"{{id}}"}}"#,
            r#"{"method":"subagent.finished","params":null}"#,
            r#"{"method":"session.event","params":{"event":[1]}}"#,
            r#"{"method":"session.status","params":{"sessionId":5,"status":"idle"}}"#,
            r#"{"type":"session_event","sessionId":"s","event":"x"}"#,
            r#"{"type":"result"}"#,
            r#"{}"#,
        ];
        for (i, l) in lines.iter().enumerate() {
            assert!(
                imp.line(i as u64 + 1, l.as_bytes(), &mut out).is_ok(),
                "{l}"
            );
        }
        assert!(imp.line(99, b"[1,2]", &mut out).is_err());
        assert!(imp.line(100, b"{oops", &mut out).is_err());
        imp.finish(&mut out);
        assert!(out.len() >= lines.len());
        let mut seqs: Vec<u64> = out.iter().map(|e| e.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), out.len(), "seqs are unique within a file");
    }
}
