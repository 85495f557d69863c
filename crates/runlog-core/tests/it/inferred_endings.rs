//! Issue #23's rules on real samples and on small logs in each format's shape: ingest and
//! reduce (no Arrow), then the outcomes a reader of the log would give.

use std::path::{Path, PathBuf};

use runlog_core::ingest::ingest_paths;
use runlog_core::{reduce_all, Derived, IngestOptions};

fn root_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(paths: &[PathBuf]) -> Derived {
    let ing = ingest_paths(paths, &IngestOptions::default()).unwrap();
    reduce_all(&ing)
}

/// Writes `lines` to a file `name` in a fresh temp folder and reduces it.
fn run_lines(name: &str, lines: &[&str]) -> Derived {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    run(&[dir.path().to_path_buf()])
}

fn states(d: &Derived) -> Vec<(String, &'static str, bool)> {
    let mut v: Vec<_> = d
        .turns
        .iter()
        .map(|t| (t.turn.to_string(), t.state.unwrap_or("-"), t.inferred))
        .collect();
    v.sort();
    v
}

#[test]
fn claude_code_sdk_transcripts_whose_assistant_finished_are_completed_inferred() {
    for t in [
        "hello-world-script",
        "coverage-test-fix",
        "stop-hook-reflection-first-stop",
        "stop-hook-uncommitted-changes",
    ] {
        let p = root_dir().join(format!(
            "tests/samples/claude-code-sdk/{t}/transcript.jsonl"
        ));
        let d = run(&[p]);
        assert_eq!(d.turns.len(), 1, "{t}: {:?}", states(&d));
        let turn = &d.turns[0];
        assert_eq!(turn.state, Some("Completed"), "{t}");
        assert!(turn.inferred, "{t}");
        assert_eq!(d.intervals.len(), 1, "{t}");
        assert_eq!(d.intervals[0].status, "settled", "{t}");
        assert!(d.intervals[0].inferred, "{t}");
    }
    let p = root_dir().join("tests/samples/agent-history/claude/session-01.jsonl");
    let d = run(&[p]);
    assert_eq!(
        states(&d),
        [(
            "e6781268-0d8b-4756-a547-6b89a7d7193e".into(),
            "Completed",
            true
        )]
    );
    assert_eq!(d.intervals[0].status, "settled");
}

const CC: &str = r#""sessionId":"s1","isSidechain":false,"userType":"external","version":"1.0.98""#;

fn cc(body: &str) -> String {
    format!("{{{CC},{body}}}")
}

#[test]
fn claude_code_three_prompts_give_three_turns_and_a_cut_turn_stays_running() {
    let lines = [
        cc(
            r#""type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"one"}"#,
        ),
        cc(
            r#""type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"done one"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}"#,
        ),
        cc(
            r#""type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"two"}"#,
        ),
        cc(
            r#""type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-01-01T00:00:03Z","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done two"}],"stop_reason":"end_turn"}"#,
        ),
        cc(
            r#""type":"user","uuid":"u3","parentUuid":"a2","timestamp":"2026-01-01T00:00:04Z","message":{"role":"user","content":"three"}"#,
        ),
        cc(
            r#""type":"assistant","uuid":"a3","parentUuid":"u3","timestamp":"2026-01-01T00:00:05Z","message":{"id":"m3","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"stop_reason":"tool_use"}"#,
        ),
    ];
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let d = run_lines("s1.jsonl", &refs);
    assert_eq!(
        states(&d),
        [
            ("u1".into(), "Completed", true),
            ("u2".into(), "Completed", true),
            ("u3".into(), "Running", false)
        ]
    );
    let st: Vec<&str> = d.intervals.iter().map(|i| i.status).collect();
    assert_eq!(st, ["settled", "settled", "unsettled"]);
}

#[test]
fn claude_code_api_errors_are_error_rows_per_attempt_retried_and_recovered() {
    let err = |n: u32, status: u32, ty: &str| {
        cc(&format!(
            r#""type":"system","subtype":"api_error","level":"error","uuid":"e{n}","timestamp":"2026-01-01T00:00:0{n}Z","error":{{"status":{status},"error":{{"type":"error","error":{{"type":"{ty}","message":"m{n}"}}}}}},"retryInMs":500,"retryAttempt":{n},"maxRetries":10"#
        ))
    };
    let lines = [
        cc(
            r#""type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}"#,
        ),
        err(1, 429, "rate_limit_error"),
        err(2, 401, "authentication_error"),
        cc(
            r#""type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-01T00:00:05Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}"#,
        ),
        cc(
            r#""type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-01-01T00:00:06Z","message":{"role":"user","content":"again"}"#,
        ),
        cc(
            r#""type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-01-01T00:00:07Z","isApiErrorMessage":true,"apiErrorStatus":400,"error":"unknown","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"API Error: something was wrong"}]}"#,
        ),
        cc(
            r#""type":"user","uuid":"u3","parentUuid":"a2","timestamp":"2026-01-01T00:00:08Z","message":{"role":"user","content":"third"}"#,
        ),
    ];
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let d = run_lines("s1.jsonl", &refs);
    let mut errs: Vec<_> = d
        .errors
        .iter()
        .map(|e| {
            (
                e.seq,
                e.source,
                e.code.clone(),
                e.http_status,
                e.retried,
                e.recovered,
            )
        })
        .collect();
    errs.sort();
    let rows: Vec<_> = errs
        .into_iter()
        .map(|e| (e.1, e.2, e.3, e.4, e.5))
        .collect();
    let c = |s: &str| Some(s.to_string());
    assert_eq!(
        rows,
        [
            // one row per attempt: retried (another call followed), recovered (turn completed)
            (
                "model",
                c("completion_rate_limited"),
                Some(429),
                Some(true),
                Some(true)
            ),
            (
                "model",
                c("completion_unauthorized"),
                Some(401),
                Some(true),
                Some(true)
            ),
            // apiErrorStatus 400 with raw code "unknown": the status decides the code
            (
                "model",
                c("completion_rejected"),
                Some(400),
                Some(false),
                Some(false)
            ),
            // the turn that gave up ends Failed (inferred) at the next prompt
            ("turn", c("completion_rejected"), Some(400), None, None),
        ]
    );
    let s = states(&d);
    assert_eq!(s[0], ("u1".into(), "Completed", true));
    assert_eq!(s[1], ("u2".into(), "Failed", true));
    assert_eq!(s[2], ("u3".into(), "Running", false));
}

#[test]
fn claude_code_inline_sidechains_are_one_subagent_session_each() {
    let side = |uuid: &str, parent: &str, ts: u32, body: &str| {
        format!(
            r#"{{"sessionId":"s1","isSidechain":true,"userType":"external","version":"1.0.98","uuid":"{uuid}","parentUuid":{parent},"timestamp":"2026-01-01T00:00:{ts:02}Z",{body}}}"#
        )
    };
    let lines = [
        cc(
            r#""type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}"#,
        ),
        cc(
            r#""type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"T1","name":"Task","input":{"prompt":"find A"}},{"type":"tool_use","id":"T2","name":"Task","input":{"prompt":"find B"}}],"stop_reason":"tool_use"}"#,
        ),
        side(
            "c1",
            "null",
            2,
            r#""type":"user","message":{"role":"user","content":"find A"}"#,
        ),
        side(
            "c2",
            "null",
            3,
            r#""type":"user","message":{"role":"user","content":"find B"}"#,
        ),
        side(
            "c3",
            "\"c1\"",
            4,
            r#""type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"A is here"}],"stop_reason":"end_turn"}"#,
        ),
        side(
            "c4",
            "\"c2\"",
            5,
            r#""type":"assistant","message":{"id":"m3","role":"assistant","content":[{"type":"text","text":"B is there"}],"stop_reason":"end_turn"}"#,
        ),
        cc(
            r#""type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-01-01T00:00:06Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"T1","content":"A is here"},{"type":"tool_result","tool_use_id":"T2","content":"B is there"}]}"#,
        ),
        cc(
            r#""type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-01-01T00:00:07Z","message":{"id":"m4","role":"assistant","content":[{"type":"text","text":"both found"}],"stop_reason":"end_turn"}"#,
        ),
    ];
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let d = run_lines("s1.jsonl", &refs);
    let mut subs: Vec<_> = d
        .turns
        .iter()
        .filter(|t| !t.is_root)
        .map(|t| (t.session.to_string(), t.state.unwrap_or("-")))
        .collect();
    subs.sort();
    assert_eq!(
        subs,
        [("s1/c1".into(), "Completed"), ("s1/c2".into(), "Completed")]
    );
    assert_eq!(states(&d).iter().filter(|t| t.0 == "u1").count(), 1);
    assert_eq!(d.intervals.len(), 1);
    assert_eq!(d.intervals[0].status, "settled");
}

#[test]
fn claude_code_subagent_file_with_its_own_session_id_joins_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("p1.jsonl");
    std::fs::write(&main, cc(r#""type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}"#).replace("\"s1\"", "\"p1\"") + "\n").unwrap();
    let sub = dir.path().join("p1/subagents/agent-x9.jsonl");
    std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
    std::fs::write(&sub, r#"{"sessionId":"other","isSidechain":true,"userType":"external","uuid":"c1","parentUuid":null,"timestamp":"2026-01-01T00:00:01Z","type":"user","message":{"role":"user","content":"sub"}}"#.to_string() + "\n").unwrap();
    let d = run(&[dir.path().to_path_buf()]);
    let roots: std::collections::BTreeSet<&str> = d.turns.iter().map(|t| t.root.as_str()).collect();
    assert_eq!(roots.into_iter().collect::<Vec<_>>(), ["p1"]);
    assert!(d.turns.iter().any(|t| t.session.as_str() == "p1/x9"));
}

const META: &str = r#"{"timestamp":"2025-10-19T20:47:01.764Z","type":"session_meta","payload":{"id":"c1","timestamp":"2025-10-19T20:47:01.756Z","cwd":"/t","originator":"codex_cli_rs","cli_version":"0.47.0"}}"#;

fn cx(ts: u32, ty: &str, payload: &str) -> String {
    format!(r#"{{"timestamp":"2025-10-19T20:48:{ts:02}.000Z","type":"{ty}","payload":{payload}}}"#)
}

#[test]
fn codex_rollouts_without_task_records_give_one_turn_per_prompt() {
    let lines = [
        META.to_string(),
        cx(1, "event_msg", r#"{"type":"user_message","message":"one"}"#),
        cx(
            2,
            "response_item",
            r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
        ),
        cx(
            3,
            "response_item",
            r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#,
        ),
        cx(
            4,
            "event_msg",
            r#"{"type":"agent_message","message":"done"}"#,
        ),
        cx(5, "event_msg", r#"{"type":"user_message","message":"two"}"#),
        cx(
            6,
            "response_item",
            r#"{"type":"tool_search_call","call_id":"c2","arguments":"{}"}"#,
        ),
        cx(
            7,
            "response_item",
            r#"{"type":"tool_search_output","call_id":"c2","output":"x"}"#,
        ),
        cx(
            8,
            "event_msg",
            r#"{"type":"agent_message","message":"done two"}"#,
        ),
        cx(
            9,
            "event_msg",
            r#"{"type":"user_message","message":"three"}"#,
        ),
        cx(
            10,
            "response_item",
            r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c3"}"#,
        ),
    ];
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let d = run_lines("rollout-x.jsonl", &refs);
    let s: Vec<(&str, bool)> = {
        let mut t: Vec<_> = d
            .turns
            .iter()
            .map(|t| (t.start_seq, t.state.unwrap_or("-"), t.inferred))
            .collect();
        t.sort();
        t.into_iter().map(|t| (t.1, t.2)).collect()
    };
    assert_eq!(
        s,
        [("Completed", true), ("Completed", true), ("Running", false)]
    );
    let mut tc: Vec<_> = d
        .tool_calls
        .iter()
        .map(|t| (t.call_id.clone().unwrap(), t.status.clone()))
        .collect();
    tc.sort();
    assert_eq!(tc[1], ("c2".into(), Some("ok".into())));
    assert_eq!(tc[2], ("c3".into(), None));
    let st: Vec<&str> = d.intervals.iter().map(|i| i.status).collect();
    assert_eq!(st, ["settled", "settled", "unsettled"]);
}

#[test]
#[ignore = "prints the outcomes of the real samples (cargo test -- --ignored --nocapture)"]
fn print_sample_outcomes() {
    for dir in ["claude-code", "claude-code-sdk", "agent-history", "codex"] {
        let d = run(&[root_dir().join("tests/samples").join(dir)]);
        let mut n = std::collections::BTreeMap::new();
        for t in &d.turns {
            *n.entry((t.is_root, t.state.unwrap_or("-"), t.inferred))
                .or_insert(0) += 1;
        }
        let iv: Vec<_> = d.intervals.iter().map(|i| (i.status, i.inferred)).collect();
        println!(
            "{dir}: turns {n:?} errors {} intervals {iv:?}",
            d.errors.len()
        );
        if dir == "claude-code" {
            for t in &d.turns {
                println!(
                    "  {},{},{},{:?},{},{}",
                    t.session,
                    t.turn,
                    t.is_root,
                    t.state,
                    t.text_len.unwrap_or(-1),
                    t.inferred
                );
            }
        }
    }
}
