//! The Gemini CLI importer (docs/importers/gemini-cli.md): reads the chats Gemini CLI
//! records under `~/.gemini/tmp/<project>/chats/` and maps them to canonical events.
//!
//! Two layouts, both read by this importer:
//! - `session-<time>-<id>.json` (releases up to 0.3x): one pretty-printed JSON document
//!   `{sessionId, projectHash, startTime, lastUpdated, messages[], kind?}`. Its lines are held
//!   and the document is parsed at the end of the file; each message's events carry the line
//!   its object starts on. A document that does not parse rejects every one of its lines.
//! - `session-<time>-<id>.jsonl` (later releases): a metadata record `{sessionId,
//!   projectHash, startTime, kind}`, then one record per message, written again whole each
//!   time the message grows (same `id`: the last version is mapped, the earlier ones are kept
//!   as `gemini-cli:<type>`), `{"$set": …}` metadata updates and `{"$rewindTo": id}`.
//!   Subagents write `chats/<parent session id>/<session id>.jsonl` with `kind: "subagent"`.
//!
//! - root = `sessionId` (a subagent: its parent's, from the folder it is written in); session =
//!   `sessionId`; turn = the `id` of the user message that opened it; ts = `timestamp`.
//! - metadata → `session/start{parent, kind}`; `user` → **open** `inbox/receipt{message_id,
//!   kind: prompt}` + `turn/start`; `gemini` → `reasoning/delta` (thoughts), `text/delta`
//!   (content), `tool/call` + `tool/result{status}` per `toolCalls[]`, `model/end{usage,
//!   model}`; `error` → `model/end{error}` (code from its text, [`classify_error`]); `info`
//!   "Request cancelled." → `turn/end{kind: cancelled, cause: user}` + idle; other `info`,
//!   `warning`, `$set`, `$rewindTo` → `gemini-cli:<type>`.
//! - Gemini CLI records no turn end: a turn ends (inferred) at the next prompt or at the end
//!   of the file: `error` when its last record is an error, `end_turn` when its last model
//!   answer called no tool; a turn whose last answer called tools is interrupted by the next
//!   prompt (cause user) and left open at the end of the file.

mod error;
mod map;

use serde_json::Value;

use super::{FileContext, Importer};
use crate::decode::excerpt;
use crate::event::Event;
use map::Emitter;

pub use error::classify_error;

/// One message (or other record) of the session, with the line it was read from.
pub(crate) struct Record {
    pub(crate) line: u64,
    pub(crate) value: Value,
}

/// How the file is laid out, known from its first line.
#[derive(PartialEq, Eq)]
enum Layout {
    Undecided,
    /// One record per line.
    Records,
    /// One JSON document over many lines (held until the end).
    Document,
}

pub struct GeminiCliImporter {
    layout: Layout,
    /// The document's lines (document layout).
    held: Vec<(u64, Vec<u8>)>,
    /// Records in order of first appearance (records layout, or the document's messages).
    records: Vec<Record>,
    /// Message id → its index in `records` (a later version replaces the earlier one).
    by_id: std::collections::HashMap<String, usize>,
    /// Rejects found at the end of the file: (line, reason, excerpt).
    late_rejects: Vec<(u64, String, String)>,
    emit: Emitter,
}

impl GeminiCliImporter {
    pub fn new(ctx: &FileContext) -> Self {
        GeminiCliImporter {
            layout: Layout::Undecided,
            held: Vec::new(),
            records: Vec::new(),
            by_id: Default::default(),
            late_rejects: Vec::new(),
            emit: Emitter::new(ctx),
        }
    }

    /// A record of the records layout: a message replaces its earlier version in place (the
    /// earlier version is kept unmapped).
    fn record(&mut self, line: u64, value: Value) {
        let id = value
            .get("id")
            .and_then(Value::as_str)
            .filter(|_| value.get("type").is_some())
            .map(str::to_string);
        if let Some(id) = id {
            if let Some(&i) = self.by_id.get(&id) {
                let old = std::mem::replace(&mut self.records[i], Record { line, value });
                self.emit.superseded.push((id, old));
                return;
            }
            self.by_id.insert(id, self.records.len());
        }
        self.records.push(Record { line, value });
    }

    /// The held document, parsed: its metadata and messages become records.
    fn read_document(&mut self) {
        let mut text = Vec::new();
        for (_, l) in &self.held {
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        let doc = match serde_json::from_slice::<Value>(&text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return self.reject_document("the document is not a JSON object".into()),
            Err(e) => return self.reject_document(format!("invalid JSON document: {e}")),
        };
        let first = self.held.first().map_or(1, |h| h.0);
        let starts = message_lines(&self.held);
        let mut meta = doc;
        let messages = match meta.remove("messages") {
            Some(Value::Array(a)) => a,
            Some(other) => vec![other],
            None => Vec::new(),
        };
        self.records.push(Record {
            line: first,
            value: Value::Object(meta),
        });
        for (i, m) in messages.into_iter().enumerate() {
            let line = starts.get(i).copied().unwrap_or(first);
            self.records.push(Record { line, value: m });
        }
    }

    fn reject_document(&mut self, reason: String) {
        for (n, l) in std::mem::take(&mut self.held) {
            self.late_rejects.push((n, reason.clone(), excerpt(&l)));
        }
    }
}

/// The line each object of the top-level `messages` array starts on, in order: a scan of
/// the document's strings and brackets.
fn message_lines(lines: &[(u64, Vec<u8>)]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut key = Vec::new(); // the last string closed at depth 1
    let mut cur = Vec::new();
    let mut in_messages = false;
    for (n, l) in lines {
        for &b in l {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                    if depth == 1 {
                        key = std::mem::take(&mut cur);
                    }
                } else if depth == 1 {
                    cur.push(b);
                }
                continue;
            }
            match b {
                b'"' => {
                    in_string = true;
                    cur.clear();
                }
                b'{' | b'[' => {
                    if b == b'[' && depth == 1 {
                        in_messages = key == b"messages";
                    }
                    if b == b'{' && depth == 2 && in_messages {
                        out.push(*n);
                    }
                    depth += 1;
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    out
}

impl Importer for GeminiCliImporter {
    fn line(&mut self, line_no: u64, line: &[u8], _out: &mut Vec<Event>) -> Result<(), String> {
        if self.layout == Layout::Undecided {
            self.layout = if line.trim_ascii() == b"{" {
                Layout::Document
            } else {
                Layout::Records
            };
        }
        if self.layout == Layout::Document {
            self.held.push((line_no, line.to_vec()));
            return Ok(());
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v @ Value::Object(_)) => {
                // A whole document on one line: its messages are its records.
                if let Some(Value::Array(_)) = v.get("messages") {
                    self.held.push((line_no, line.to_vec()));
                    self.read_document();
                    self.held.clear();
                } else {
                    self.record(line_no, v);
                }
                Ok(())
            }
            Ok(_) => Err("record is not a JSON object".into()),
            Err(e) => Err(format!("invalid JSON: {e}")),
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if self.layout == Layout::Document {
            self.read_document();
        }
        let records = std::mem::take(&mut self.records);
        self.emit.all(records, out);
    }

    fn rejects(&mut self) -> Vec<(u64, String, String)> {
        std::mem::take(&mut self.late_rejects)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{context, feed};

    const DOC: &str = r#"{
  "sessionId": "s1",
  "projectHash": "h",
  "startTime": "2026-04-01T11:11:56.830Z",
  "messages": [
    {
      "id": "u1",
      "timestamp": "2026-04-01T11:11:56.830Z",
      "type": "user",
      "content": [{"text": "hi {not a bracket"}]
    },
    {
      "id": "g1",
      "timestamp": "2026-04-01T11:12:19.195Z",
      "type": "gemini",
      "content": "hello",
      "tokens": {"input": 10, "output": 2, "cached": 4, "thoughts": 3, "tool": 0, "total": 15},
      "model": "gemini-3-flash-preview"
    }
  ],
  "kind": "main"
}"#;

    fn kinds(evs: &[Event]) -> Vec<(&str, u64)> {
        evs.iter().map(|e| (&*e.kind, e.line)).collect()
    }

    #[test]
    fn a_document_s_events_carry_the_line_their_message_starts_on() {
        let lines: Vec<&str> = DOC.lines().collect();
        let mut imp = GeminiCliImporter::new(&context("chats/session-x.json"));
        let (evs, rejected) = feed(&mut imp, &lines);
        assert!(rejected.is_empty());
        assert_eq!(
            kinds(&evs),
            [
                ("session/start", 1),
                ("inbox/receipt", 6),
                ("turn/start", 6),
                ("text/delta", 12),
                ("model/end", 12),
                ("turn/end", 12),
                ("agent/idle", 12),
            ]
        );
        assert!(
            evs[4].data.contains(r#""input_tokens":10"#),
            "{}",
            evs[4].data
        );
        assert!(
            evs[4].data.contains(r#""output_tokens":5"#),
            "{}",
            evs[4].data
        );
        assert!(evs[5].data.contains(r#""kind":"end_turn""#));
        assert!(imp.rejects().is_empty());
    }

    #[test]
    fn a_broken_document_rejects_every_line() {
        let lines: Vec<&str> = DOC.lines().take(8).collect();
        let mut imp = GeminiCliImporter::new(&context("session-x.json"));
        let (evs, _) = feed(&mut imp, &lines);
        assert!(evs.is_empty());
        let rejects = imp.rejects();
        let nos: Vec<u64> = rejects.iter().map(|r| r.0).collect();
        assert_eq!(nos, (1..=8).collect::<Vec<u64>>());
        assert!(rejects[0].1.contains("invalid JSON document"));
    }

    #[test]
    fn a_message_written_again_is_mapped_once_and_its_first_version_kept() {
        let lines = [
            r#"{"sessionId":"s2","projectHash":"h","startTime":"2026-04-02T09:00:00.000Z","kind":"main"}"#,
            r#"{"id":"u1","timestamp":"2026-04-02T09:00:01.000Z","type":"user","content":"go"}"#,
            r#"{"id":"g1","timestamp":"2026-04-02T09:00:03.000Z","type":"gemini","content":"","tokens":null}"#,
            r#"{"id":"g1","timestamp":"2026-04-02T09:00:03.000Z","type":"gemini","content":"done","tokens":{"input":5,"output":1,"cached":0,"total":6}}"#,
            r#"{"$rewindTo":"u1"}"#,
        ];
        let mut imp = GeminiCliImporter::new(&context("chats/session-y.jsonl"));
        let (evs, rejected) = feed(&mut imp, &lines);
        assert!(rejected.is_empty());
        assert_eq!(
            kinds(&evs),
            [
                ("session/start", 1),
                ("inbox/receipt", 2),
                ("turn/start", 2),
                ("gemini-cli:gemini", 3),
                ("text/delta", 4),
                ("model/end", 4),
                ("gemini-cli:$rewindTo", 5),
                ("turn/end", 5),
                ("agent/idle", 5),
            ]
        );
        assert_eq!(&*evs[0].root, "s2");
    }

    #[test]
    fn an_answered_turn_ends_at_its_answer_not_at_the_next_prompt() {
        let lines = [
            r#"{"sessionId":"s3","projectHash":"h"}"#,
            r#"{"id":"u1","timestamp":"2026-04-02T09:00:01.000Z","type":"user","content":"a"}"#,
            r#"{"id":"g1","timestamp":"2026-04-02T09:00:05.000Z","type":"gemini","content":"b"}"#,
            r#"{"$set":{"lastUpdated":"2026-04-02T09:00:05.000Z"}}"#,
            r#"{"id":"u2","timestamp":"2026-04-02T09:10:00.000Z","type":"user","content":"c"}"#,
        ];
        let mut imp = GeminiCliImporter::new(&context("session-z.jsonl"));
        let (evs, _) = feed(&mut imp, &lines);
        let at = |k: &str| evs.iter().find(|e| &*e.kind == k).map(|e| e.ts);
        assert_eq!(at("turn/end"), at("model/end"));
        assert_eq!(at("gemini-cli:$set"), at("model/end"));
        assert!(evs
            .iter()
            .any(|e| &*e.kind == "gemini-cli:$set" && e.data.contains("ts_synthetic")));
    }

    #[test]
    fn a_subagent_chat_joins_its_parent_without_an_interval() {
        let lines = [
            r#"{"sessionId":"sub","projectHash":"h","kind":"subagent"}"#,
            r#"{"id":"u1","timestamp":"2026-04-02T09:00:01.000Z","type":"user","content":"go"}"#,
            r#"{"id":"g1","timestamp":"2026-04-02T09:00:02.000Z","type":"gemini","content":"ok"}"#,
        ];
        let mut imp = GeminiCliImporter::new(&context("h/chats/parent-1/sub.jsonl"));
        let (evs, _) = feed(&mut imp, &lines);
        assert!(evs
            .iter()
            .all(|e| &*e.root == "parent-1" && &*e.session == "sub"));
        assert!(
            evs[0].data.contains(r#""parent":"parent-1""#),
            "{}",
            evs[0].data
        );
        let k: Vec<&str> = evs.iter().map(|e| &*e.kind).collect();
        assert!(
            !k.contains(&"inbox/receipt") && !k.contains(&"agent/idle"),
            "{k:?}"
        );
        assert!(k.contains(&"turn/end"));
    }
}
