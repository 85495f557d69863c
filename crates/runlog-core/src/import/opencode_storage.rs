//! OpenCode's session storage (docs/importers/opencode.md): the JSON files releases before
//! 1.2 write under `~/.local/share/opencode/storage/`, one document per file, mapped to
//! canonical events. Which document a file holds is told by its content:
//!
//! - session (`session/<project>/<id>.json`: `id`, `projectID` or `directory`, `time`) →
//!   `session/start{parent: parentID, name: title}`; a subagent's session (`parentID`) is
//!   rooted at its parent, and the links are followed across files to the top.
//! - message (`message/<session>/<id>.json`: `role`):
//!   - `user` → **open** `inbox/receipt{message_id, kind: prompt}` + `turn/start` (turn = the
//!     message id);
//!   - `assistant` (one model step; turn = `parentID`, the user message it answers): an
//!     `error` → `model/end{error}` + `turn/end{kind: error}` (`MessageAbortedError`: no
//!     model error, `turn/end{kind: aborted}`); a `finish` other than `tool-calls` /
//!     `unknown` (OpenCode's own test for the end of its loop) → `turn/end{kind}` (`stop` →
//!     `end_turn`, `length` → `max_tokens`, `content-filter` → `refusal`, text: the message's
//!     last text part); both followed by the synthetic `agent/idle` unless the session is a
//!     subagent's. Any other assistant message is kept as `opencode:assistant`.
//! - part (`part/<message>/<id>.json`: `messageID`, `type`): in an assistant message `text`
//!   / `reasoning` → `text/delta` / `reasoning/delta`, `tool` → `tool/call` + `tool/result`
//!   (`completed` → ok, `error` → error or denied), `step-finish` → `model/end{finish_reason:
//!   reason, usage, cost, model}` (one model call per step), `retry` → `model/end{error}` (a
//!   failed attempt, retried); every other part, and every part of a user message, is kept as
//!   `opencode:<type>`.
//!
//! ts: the document's own time (`time.created`, `time.completed`, a part's `time.start` /
//! `state.time`), else the time in the part's id (placed by its message's time), else
//! synthetic. A message's end is placed at the end of its completion millisecond, after the
//! parts written in it. root = session = `sessionID`.

use serde_json::{json, Map, Value};

use super::opencode::{end_kind, error_object, tool_result, usage};
use super::opencode_store::{id_millis, Store};
use super::{event, flag, synthetic_ts, unmapped, Format};
use crate::event::Event;

/// Which storage document a JSON object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doc {
    Session,
    Message,
    Part,
}

/// The storage document `o` is, if it is one.
pub fn doc_kind(o: &Map<String, Value>) -> Option<Doc> {
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    let id = s("id")?;
    if s("sessionID").is_some() && s("messageID").is_some() && s("type").is_some() {
        return Some(Doc::Part);
    }
    if s("sessionID").is_some() && matches!(s("role"), Some("user" | "assistant")) {
        return Some(Doc::Message);
    }
    let session_like = s("projectID").is_some() || s("directory").is_some();
    (id.starts_with("ses_") && session_like && o.get("time").is_some_and(Value::is_object))
        .then_some(Doc::Session)
}

/// Whether the first bytes of a `.json` file look like a storage document (folder ingest
/// reads it).
pub fn sniff_head(head: &[u8]) -> bool {
    let has = |k: &[u8]| head.windows(k.len()).any(|w| w == k);
    let session = (has(b"\"id\": \"ses_") || has(b"\"id\":\"ses_"))
        && (has(b"\"projectID\"") || has(b"\"directory\""));
    (has(b"\"sessionID\"") && (has(b"\"messageID\"") || has(b"\"role\""))) || session
}

/// Maps one storage document read from the file `name` (its events carry `line`), its
/// neighbours read beside that file.
pub fn map(name: &str, rel: &str, line: u64, doc: Map<String, Value>, out: &mut Vec<Event>) {
    let folder = match doc_kind(&doc) {
        Some(Doc::Part) => "part",
        _ => "message",
    };
    let store = Store::of(name, folder);
    map_in(store.as_ref(), rel, line, doc, out);
}

/// Maps one storage document (its events carry `line`), its neighbours found in `store`.
pub fn map_in(
    store: Option<&Store>,
    rel: &str,
    line: u64,
    doc: Map<String, Value>,
    out: &mut Vec<Event>,
) {
    let mut e = Emit {
        line,
        seq: 0,
        root: String::new(),
        session: String::new(),
        out,
    };
    match doc_kind(&doc) {
        Some(Doc::Session) => session(&mut e, rel, doc),
        Some(Doc::Message) => message(&mut e, store, doc),
        Some(Doc::Part) => part(&mut e, store, doc),
        None => {
            e.root = rel.to_string();
            e.session = rel.to_string();
            e.push(
                (synthetic_ts(0, 0), true),
                None,
                "opencode:document",
                Value::Object(doc),
            );
        }
    }
}

struct Emit<'o> {
    line: u64,
    seq: u64,
    root: String,
    session: String,
    out: &'o mut Vec<Event>,
}

impl Emit<'_> {
    fn push(&mut self, ts: (i64, bool), turn: Option<&str>, kind: &str, mut data: Value) {
        if ts.1 {
            flag(&mut data, "ts_synthetic");
        }
        let mut ev = event(self.seq, ts.0, &self.root, &self.session, turn, kind, data);
        ev.line = self.line;
        self.out.push(ev);
        self.seq += 1;
    }
}

fn str_of<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    o.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A positive millisecond time at `path` under `o`.
fn millis(o: &Map<String, Value>, path: &[&str]) -> Option<i64> {
    let mut v = o.get(path[0])?;
    for k in &path[1..] {
        v = v.get(k)?;
    }
    v.as_i64().filter(|ms| *ms > 0)
}

fn at(ms: Option<i64>) -> (i64, bool) {
    match ms {
        Some(ms) => (ms.saturating_mul(1000), false),
        None => (synthetic_ts(0, 0), true),
    }
}

fn session(e: &mut Emit, rel: &str, doc: Map<String, Value>) {
    let id = str_of(&doc, "id").unwrap_or(rel).to_string();
    let parent = str_of(&doc, "parentID").map(str::to_string);
    e.root = parent.clone().unwrap_or_else(|| id.clone());
    e.session = id;
    let mut data = json!({ "parent": parent, "parent_turn": null });
    for (from, to) in [("title", "name"), ("version", "version"), ("slug", "slug")] {
        if let Some(v) = str_of(&doc, from) {
            data[to] = Value::String(v.to_string());
        }
    }
    if let Some(d) = str_of(&doc, "directory") {
        data["directory"] = Value::String(d.to_string());
    }
    e.push(
        at(millis(&doc, &["time", "created"])),
        None,
        "session/start",
        data,
    );
}

fn message(e: &mut Emit, store: Option<&Store>, doc: Map<String, Value>) {
    let id = str_of(&doc, "id").unwrap_or_default().to_string();
    let session = str_of(&doc, "sessionID").unwrap_or_default().to_string();
    e.root = session.clone();
    e.session = session.clone();
    let created = millis(&doc, &["time", "created"]);
    if str_of(&doc, "role") == Some("user") {
        let mut data = json!({ "message_id": id, "kind": "prompt" });
        if let Some(a) = str_of(&doc, "agent") {
            data["agent"] = Value::String(a.to_string());
        }
        if let Some(m) = doc.get("model").and_then(|m| m.get("modelID")) {
            data["model"] = m.clone();
        }
        if let Some(prev) = store.and_then(|s| replaced_turn(s, &session, &id)) {
            let end = json!({ "reason": { "kind": "replaced" }, "inferred": true });
            e.push(at(created), Some(&prev), "turn/end", end);
        }
        e.push(at(created), None, "inbox/receipt", data);
        e.push(at(created), Some(&id), "turn/start", json!({}));
        return;
    }
    let turn = str_of(&doc, "parentID").map(str::to_string);
    let (finish, ends) = ending(&doc, store);
    let Some(turn) = turn.clone().filter(|_| ends) else {
        let t = turn.as_deref().filter(|t| !t.is_empty());
        e.push(at(created), t, "opencode:assistant", Value::Object(doc));
        return;
    };
    // The end of the completion millisecond: after every part written in it.
    let end_ts = match millis(&doc, &["time", "completed"]).or(created) {
        Some(ms) => (ms.saturating_mul(1000).saturating_add(999), false),
        None => (synthetic_ts(0, 0), true),
    };
    let reason = match doc.get("error").filter(|v| v.is_object()) {
        Some(err) if err.get("name").and_then(Value::as_str) == Some("MessageAbortedError") => {
            json!({ "kind": "aborted" })
        }
        Some(err) => {
            let err = error_object(err);
            let mut data = json!({ "error": err.clone(), "message_id": id });
            if let Some(m) = str_of(&doc, "modelID") {
                data["model"] = Value::String(m.to_string());
            }
            e.push(end_ts, Some(&turn), "model/end", data);
            json!({ "kind": "error", "error": err })
        }
        None => json!({ "kind": end_kind(finish.as_deref().unwrap_or("")).unwrap_or("end_turn") }),
    };
    let mut data = json!({ "reason": reason, "inferred": true, "message_id": id });
    if data["reason"]["kind"] == "end_turn" {
        if let Some(t) = store.and_then(|s| last_text(s, &id)) {
            data["text"] = Value::String(t);
        }
    }
    e.push(end_ts, Some(&turn), "turn/end", data);
    let subagent = store
        .and_then(|s| s.session(&session))
        .is_some_and(|s| str_of(&s, "parentID").is_some());
    if !subagent {
        let idle = json!({ "synthetic": true, "inferred": true });
        e.push(end_ts, None, "agent/idle", idle);
    }
}

/// The last text part of a message (its answer), synthetic texts aside.
fn last_text(store: &Store, message: &str) -> Option<String> {
    store
        .parts(message)
        .into_iter()
        .rev()
        .filter(|p| str_of(p, "type") == Some("text") && p.get("synthetic") != Some(&json!(true)))
        .find_map(|p| str_of(&p, "text").map(str::to_string))
}

/// Whether an assistant message ends its turn: (its finish, it ends). A completed
/// message without `finish` (releases that did not write it) has its last step's reason.
fn ending(doc: &Map<String, Value>, store: Option<&Store>) -> (Option<String>, bool) {
    let failed = doc.get("error").is_some_and(Value::is_object);
    let finish = match str_of(doc, "finish") {
        Some(f) => Some(f.to_string()),
        None if !failed && millis(doc, &["time", "completed"]).is_some() => {
            let id = str_of(doc, "id").unwrap_or_default();
            store.and_then(|s| last_step_reason(s, id))
        }
        None => None,
    };
    let ends = failed
        || finish
            .as_deref()
            .is_some_and(|f| !matches!(f, "tool-calls" | "unknown"));
    (finish, ends)
}

/// The session's previous user message, when no step answering it ended before this one was
/// written: OpenCode's loop answers the newest user message, so that turn was replaced.
fn replaced_turn(store: &Store, session: &str, id: &str) -> Option<String> {
    let mut ended = std::collections::HashSet::new();
    for m in store.earlier_messages(session, id).take(MAX_SCAN) {
        let m = m?;
        if str_of(&m, "role") == Some("user") {
            let prev = str_of(&m, "id")?;
            return (!ended.contains(prev)).then(|| prev.to_string());
        }
        if ending(&m, Some(store)).1 {
            if let Some(p) = str_of(&m, "parentID") {
                ended.insert(p.to_string());
            }
        }
    }
    None
}

/// How many earlier messages are read to find the previous prompt.
const MAX_SCAN: usize = 2000;

/// The `reason` of a message's last `step-finish` part.
fn last_step_reason(store: &Store, message: &str) -> Option<String> {
    store
        .parts(message)
        .into_iter()
        .rev()
        .find(|p| str_of(p, "type") == Some("step-finish"))
        .and_then(|p| str_of(&p, "reason").map(str::to_string))
}

/// What a part's message tells: its role, the turn (the user message it answers or is),
/// its creation time and model.
#[derive(Default)]
struct Owner {
    role: Option<String>,
    turn: Option<String>,
    created: Option<i64>,
    completed: Option<i64>,
    model: Option<String>,
}

fn owner(store: Option<&Store>, session: &str, message: &str) -> Owner {
    let Some(m) = store.and_then(|s| s.message(session, message)) else {
        return Owner::default();
    };
    let role = str_of(&m, "role").map(str::to_string);
    let turn = match role.as_deref() {
        Some("user") => Some(message.to_string()),
        _ => str_of(&m, "parentID").map(str::to_string),
    };
    Owner {
        role,
        turn,
        created: millis(&m, &["time", "created"]),
        completed: millis(&m, &["time", "completed"]),
        model: str_of(&m, "modelID").map(str::to_string),
    }
}

fn part(e: &mut Emit, store: Option<&Store>, doc: Map<String, Value>) {
    let session = str_of(&doc, "sessionID").unwrap_or_default().to_string();
    let message = str_of(&doc, "messageID").unwrap_or_default().to_string();
    e.root = session.clone();
    e.session = session.clone();
    let own = owner(store, &session, &message);
    let ty = str_of(&doc, "type").unwrap_or("part").to_string();
    let id_time = str_of(&doc, "id")
        .zip(own.created.or(own.completed))
        .and_then(|(id, near)| id_millis(id, near));
    let written = id_time.or(own.created);
    let turn = own.turn.as_deref();
    let assistant = own.role.as_deref() != Some("user");
    match ty.as_str() {
        "text" | "reasoning" if assistant && own.role.is_some() => {
            let ms = millis(&doc, &["time", "end"])
                .or(millis(&doc, &["time", "start"]))
                .or(written);
            let text = str_of(&doc, "text").unwrap_or_default();
            let kind = if ty == "text" {
                "text/delta"
            } else {
                "reasoning/delta"
            };
            e.push(at(ms), turn, kind, json!({ "text": text }));
        }
        "tool" if assistant => tool(e, &doc, turn, written),
        "step-finish" if assistant => {
            let mut data = json!({ "message_id": message });
            if let Some(r) = str_of(&doc, "reason") {
                data["finish_reason"] = Value::String(r.to_string());
            }
            if let Some(t) = doc.get("tokens").filter(|t| t.is_object()) {
                data["usage"] = usage(t);
            }
            if let Some(c) = doc.get("cost").filter(|c| c.is_number()) {
                data["cost"] = c.clone();
            }
            if let Some(m) = &own.model {
                data["model"] = Value::String(m.clone());
            }
            e.push(at(written.or(own.completed)), turn, "model/end", data);
        }
        "retry" if assistant => {
            let err = doc.get("error").cloned().unwrap_or(Value::Null);
            let mut err = error_object(&err);
            err["retryable"] = Value::Bool(true);
            let mut data = json!({ "error": err, "message_id": message });
            if let Some(a) = doc.get("attempt") {
                data["attempt"] = a.clone();
            }
            let ms = millis(&doc, &["time", "created"]).or(written);
            e.push(at(ms), turn, "model/end", data);
        }
        _ => {
            let ms = millis(&doc, &["time", "start"]).or(written);
            e.push(
                at(ms),
                turn,
                &unmapped(Format::Opencode, &ty),
                Value::Object(doc),
            );
        }
    }
}

/// A tool part: `tool/call` at its start, `tool/result` at its end when it ended.
fn tool(e: &mut Emit, doc: &Map<String, Value>, turn: Option<&str>, written: Option<i64>) {
    let state = doc.get("state").and_then(Value::as_object);
    let st = |k: &str| state.and_then(|s| s.get(k));
    let call_id = str_of(doc, "callID")
        .or(str_of(doc, "id"))
        .unwrap_or_default()
        .to_string();
    let data = json!({
        "call_id": call_id,
        "name": doc.get("tool").cloned().unwrap_or(Value::Null),
        "arguments": st("input").cloned().unwrap_or(Value::Null),
    });
    let start = state
        .and_then(|s| millis(s, &["time", "start"]))
        .or(written);
    e.push(at(start), turn, "tool/call", data);
    let Some(data) = tool_result(&call_id, doc.get("state")) else {
        return;
    };
    let end = state.and_then(|s| millis(s, &["time", "end"])).or(start);
    e.push(at(end), turn, "tool/result", data);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn documents_are_told_by_their_keys() {
        let part = obj(
            r#"{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"x"}"#,
        );
        assert_eq!(doc_kind(&part), Some(Doc::Part));
        let msg = obj(r#"{"id":"msg_1","sessionID":"ses_1","role":"user","time":{"created":1}}"#);
        assert_eq!(doc_kind(&msg), Some(Doc::Message));
        let ses = obj(
            r#"{"id":"ses_1","projectID":"p","directory":"/","title":"t","time":{"created":1}}"#,
        );
        assert_eq!(doc_kind(&ses), Some(Doc::Session));
        let other = obj(r#"{"id":"x","worktree":"/","time":{"created":1}}"#);
        assert_eq!(doc_kind(&other), None);
        assert!(sniff_head(
            b"{\n  \"id\": \"ses_1\",\n  \"projectID\": \"p\""
        ));
        assert!(!sniff_head(
            b"{\n  \"id\": \"4b0e\",\n  \"worktree\": \"/\""
        ));
    }

    /// Writes `storage/<rel>` under `root` as OpenCode does (pretty JSON).
    fn put(root: &std::path::Path, rel: &str, v: &str) -> String {
        let path = root.join("storage").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(v).unwrap());
        std::fs::write(&path, pretty.unwrap()).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn a_completed_message_without_finish_ends_with_its_last_step() {
        let dir = tempfile::tempdir().unwrap();
        let msg = put(
            dir.path(),
            "message/ses_1/msg_2.json",
            r#"{"id":"msg_2","sessionID":"ses_1","role":"assistant","parentID":"msg_1","time":{"created":10,"completed":20}}"#,
        );
        put(
            dir.path(),
            "part/msg_2/prt_1.json",
            r#"{"id":"prt_1","sessionID":"ses_1","messageID":"msg_2","type":"step-finish","reason":"length"}"#,
        );
        let mut out = Vec::new();
        map(
            &msg,
            "msg_2.json",
            1,
            obj(&std::fs::read_to_string(&msg).unwrap()),
            &mut out,
        );
        let kinds: Vec<&str> = out.iter().map(|e| &*e.kind).collect();
        assert_eq!(kinds, ["turn/end", "agent/idle"]);
        assert!(
            out[0].data.contains(r#""kind":"max_tokens""#),
            "{}",
            out[0].data
        );
        assert_eq!(out[0].turn.as_deref(), Some("msg_1"));
        assert_eq!(out[0].ts, 20_999);
    }

    #[test]
    fn a_prompt_sent_mid_run_replaces_the_unanswered_one() {
        let dir = tempfile::tempdir().unwrap();
        let user = |id: &str, ms: u64| {
            let v = format!(
                r#"{{"id":"{id}","sessionID":"ses_1","role":"user","time":{{"created":{ms}}}}}"#
            );
            put(dir.path(), &format!("message/ses_1/{id}.json"), &v)
        };
        let step = |id: &str, parent: &str, finish: &str| {
            let v = format!(
                r#"{{"id":"{id}","sessionID":"ses_1","role":"assistant","parentID":"{parent}","time":{{"created":1,"completed":2}},"finish":"{finish}"}}"#
            );
            put(dir.path(), &format!("message/ses_1/{id}.json"), &v)
        };
        user("msg_a01", 100);
        step("msg_a02", "msg_a01", "stop");
        user("msg_a03", 200);
        step("msg_a04", "msg_a03", "tool-calls");
        let last = user("msg_a05", 300);
        let second = dir.path().join("storage/message/ses_1/msg_a03.json");
        let read = |p: &str| obj(&std::fs::read_to_string(p).unwrap());
        // The second prompt follows an answered one: nothing ends before it.
        let mut out = Vec::new();
        let p = second.to_string_lossy().into_owned();
        map(&p, "msg_a03.json", 1, read(&p), &mut out);
        let kinds: Vec<&str> = out.iter().map(|e| &*e.kind).collect();
        assert_eq!(kinds, ["inbox/receipt", "turn/start"]);
        // The third follows one whose only step called tools: that turn was replaced.
        let mut out = Vec::new();
        map(&last, "msg_a05.json", 1, read(&last), &mut out);
        let kinds: Vec<&str> = out.iter().map(|e| &*e.kind).collect();
        assert_eq!(kinds, ["turn/end", "inbox/receipt", "turn/start"]);
        assert_eq!(out[0].turn.as_deref(), Some("msg_a03"));
        assert!(out[0].data.contains(r#""kind":"replaced""#));
        assert_eq!(out[0].ts, 300_000);
    }

    #[test]
    fn a_part_read_alone_is_kept_or_mapped_without_a_turn() {
        let mut out = Vec::new();
        let tool = obj(
            r#"{"id":"prt_b9fa5b51c001zmyM3D7vlByckQ","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"toolu_1","tool":"write","state":{"status":"error","input":{},"error":"Tool execution aborted","time":{"start":1767910047697,"end":1767910047697}}}"#,
        );
        map("prt.json", "prt.json", 1, tool, &mut out);
        let kinds: Vec<&str> = out.iter().map(|e| &*e.kind).collect();
        assert_eq!(kinds, ["tool/call", "tool/result"]);
        assert_eq!(out[0].turn, None);
        assert_eq!(out[1].ts, 1_767_910_047_697_000);
        assert!(out[1].data.contains(r#""status":"error""#));
        let mut out = Vec::new();
        let text = obj(
            r#"{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"hi"}"#,
        );
        map("prt.json", "prt.json", 1, text, &mut out);
        assert_eq!(&*out[0].kind, "opencode:text");
        assert!(out[0].data.contains("ts_synthetic"));
    }
}
