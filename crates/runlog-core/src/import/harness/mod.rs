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

mod events;
mod fields;
mod shapes;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{event, flag, is_placeholder, unmapped, FileContext, Format, Importer, Unmapped};
use crate::event::{Event, PayloadIndex};
use crate::import::Payloads;
use fields::turn_id;

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
    payloads: Payloads,
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
            payloads: Payloads::of(ctx),
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
            self.payloads.data(kind, data),
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
            ev.data = match self.payloads.data(&ev.kind, h.data) {
                Value::Null => "{}".into(),
                data => super::json_text(&data).into(),
            };
            ev.index = PayloadIndex::of(&ev.kind, &ev.data);
            out.push(ev);
        }
    }
}

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

#[cfg(test)]
mod tests;
