//! The harness importer on small persisted logs and captures: seqs of packed rows, held
//! model errors, scrubbed capture ids, rejected approvals, sibling parents, odd records.

use super::fields::sibling_parent;
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
        keep: None,
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
