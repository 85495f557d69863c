//! The Claude Code importer on short transcripts: API error texts and lines, subagent files,
//! local commands, and a main transcript linked to its Task subagent.

use super::errors::api_error;
use super::*;
use crate::import::testing::{context, feed};

#[test]
fn api_error_text_gives_code_status_and_raw_code() {
    let e = api_error(
        r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":null}"#,
        None,
        None,
    );
    assert_eq!(e["code"], "completion_unavailable");
    assert_eq!(e["details"]["http_status"], 529);
    assert_eq!(e["details"]["raw_code"], "overloaded_error");
    assert_eq!(e["message"], "Overloaded");
    // No status: the text decides.
    let e = api_error("API Error: Request timed out.", None, None);
    assert_eq!(e["code"], "completion_timed_out");
    assert_eq!(e["message"], "API Error: Request timed out.");
    // Claude Code 2.1.x: a prefix before `API Error:`, the class in the `error` field.
    let e = api_error(
        "Please run /login · API Error: 403 Request not allowed",
        Some("authentication_failed"),
        Some(403),
    );
    assert_eq!(e["code"], "completion_unauthorized");
    assert_eq!(e["details"]["http_status"], 403);
    assert_eq!(e["details"]["raw_code"], "authentication_failed");
    // A spent plan quota is billing, not a per-minute rate.
    let e = api_error(
        "You've hit your session limit · resets 8:10pm (Europe/Zagreb)",
        Some("rate_limit"),
        Some(429),
    );
    assert_eq!(e["code"], "completion_billing_denied");
    assert_eq!(e["details"]["http_status"], 429);
    let e = api_error("API Error: 429 slow down", Some("rate_limit"), None);
    assert_eq!(e["code"], "completion_rate_limited");
    let e = api_error("Credit balance is too low", Some("billing_error"), None);
    assert_eq!(e["code"], "completion_billing_denied");
    // `unknown`: the status decides.
    let e = api_error("API Error: 529 Overloaded.", Some("unknown"), None);
    assert_eq!(e["code"], "completion_unavailable");
    assert_eq!(e["details"]["http_status"], 529);
    assert_eq!(e["details"]["raw_code"], "unknown");
}

fn run(lines: &[&str]) -> Vec<Event> {
    let (evs, rejected) = feed(&mut ClaudeCodeImporter::new(&context("s.jsonl")), lines);
    assert!(rejected.is_empty(), "lines rejected: {rejected:?}");
    evs
}

/// The events of the sample file `rel` (under tests/samples), its blank lines skipped.
fn run_sample(rel: &str) -> Vec<Event> {
    let path = format!("{}/../../tests/samples/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    run(&lines)
}

#[test]
fn api_error_line_is_a_model_error_and_time_never_runs_back() {
    let evs = run(&[
        r#"{"type":"summary","summary":"x"}"#,
        r#"{"type":"user","sessionId":"s","uuid":"u1","isSidechain":false,"timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","sessionId":"s","uuid":"a1","isSidechain":false,"timestamp":"2026-01-01T00:00:01Z","isApiErrorMessage":true,"message":{"id":"x","content":[{"type":"text","text":"API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow\"}}"}]}}"#,
    ]);
    let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
    // Claude Code gave up on the call: the turn ends failed where the message is.
    assert_eq!(
        kinds,
        [
            "claude-code:summary",
            "inbox/receipt",
            "turn/start",
            "model/end",
            "turn/end",
            "agent/idle"
        ]
    );
    let end: Value = serde_json::from_str(&evs[4].data).unwrap();
    assert_eq!(end["reason"]["kind"], "error");
    assert_eq!(end["reason"]["error"]["code"], "completion_rate_limited");
    assert!(evs.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert_eq!(evs[0].line, 1);
    let d: Value = serde_json::from_str(&evs[3].data).unwrap();
    assert_eq!(d["error"]["code"], "completion_rate_limited");
    assert_eq!(evs[3].turn.as_deref(), Some("u1"));
}

#[test]
fn a_subagent_file_is_one_session_whatever_its_records_name() {
    let rel = "s/subagents/agent-aside_question-9f8e.jsonl";
    let lines = [
        r#"{"type":"file-history-snapshot","messageId":"x"}"#,
        r#"{"type":"user","sessionId":"s","agentId":"a1","uuid":"q0","isSidechain":true,"isMeta":true,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"replayed"}}"#,
        r#"{"type":"user","sessionId":"s","uuid":"q1","isSidechain":true,"timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"which is largest?"}}"#,
        r#"{"type":"assistant","sessionId":"s","uuid":"q2","isSidechain":true,"timestamp":"2026-01-01T00:00:03Z","message":{"id":"m","content":[{"type":"text","text":"README"}]}}"#,
    ];
    let (evs, rejected) = feed(&mut ClaudeCodeImporter::new(&context(rel)), &lines);
    assert!(rejected.is_empty());
    assert!(
        evs.iter().all(|e| e.session == "s/aside_question-9f8e"),
        "{:?}",
        evs.iter().map(|e| &e.session).collect::<Vec<_>>()
    );
    // A context fork's turn ends at the end of its file (no Task result ends it).
    assert_eq!(evs.last().map(|e| e.kind.as_str()), Some("turn/end"));
}

#[test]
fn a_local_command_and_its_synthetic_answer_open_no_turn() {
    let evs = run(&[
        r#"{"type":"user","sessionId":"s","uuid":"c1","isSidechain":false,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"<command-name>/login</command-name>"}}"#,
        r#"{"type":"assistant","sessionId":"s","uuid":"c2","isSidechain":false,"timestamp":"2026-01-01T00:00:02Z","isApiErrorMessage":true,"error":"authentication_failed","message":{"model":"<synthetic>","content":[{"type":"text","text":"Not logged in · Please run /login"}]}}"#,
    ]);
    let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["claude-code:user", "claude-code:assistant"]);
}

#[test]
fn main_transcript_links_its_task_subagent() {
    let evs = run_sample("claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl");
    let sid = "258c7280-ae70-4798-800f-63464d01a85d";
    let child = format!("{sid}/a881341");
    let starts: Vec<&Event> = evs.iter().filter(|e| e.kind == "session/start").collect();
    assert_eq!(starts.len(), 1);
    assert_eq!(starts[0].session, child);
    assert_eq!(starts[0].root, sid);
    assert_eq!(starts[0].line, 1474); // the first agent_progress
    let d: Value = serde_json::from_str(&starts[0].data).unwrap();
    assert_eq!(d["parent"], sid);
    // The Task tool_use (line 1473) is in the turn opened by line 496.
    assert_eq!(d["parent_turn"], "0a5857c1-7c3d-4165-b520-c7eff1cfa27a");
    // The Task's result (line 1480, toolUseResult.status "completed") ends the child's turn.
    let end = evs
        .iter()
        .find(|e| e.kind == "turn/end" && e.session == child)
        .unwrap();
    assert_eq!(end.line, 1480);
    assert_eq!(
        end.turn.as_deref(),
        Some("99c77085-8ebd-4871-bdf6-ea5801acb7c9")
    );
    assert!(evs
        .windows(2)
        .all(|w| w[0].ts <= w[1].ts && w[0].seq < w[1].seq));
}

/// A number is written back with every digit its record gave: the retry delay of a
/// rate-limited call (tests/samples/claude-code-irrlicht, line 19, `"retryInMs":
/// 1005.5267277985121`) is the nearest double, not one a bit away.
#[test]
fn numbers_keep_every_digit_of_the_record() {
    let evs = run_sample("claude-code-irrlicht/e27a2eb5-44c0-47d2-917d-55f21505db6e.jsonl");
    let end = evs
        .iter()
        .find(|e| e.line == 19 && e.kind == "model/end")
        .unwrap();
    assert!(
        end.data
            .as_str()
            .contains(r#""retry_in_ms":1005.5267277985121"#),
        "{}",
        end.data.as_str()
    );
}
