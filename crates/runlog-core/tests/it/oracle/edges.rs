//! The hand-written corner cases of the reducer (one agent "edge" each), checked against
//! the oracle by `oracle_agrees_on_edge_cases`.

use serde_json::{json, Value};

/// One event line: `(seq, session, turn, type, data)` of root "edge".
pub fn edge_line(seq: u64, session: &str, turn: Option<&str>, typ: &str, data: Value) -> String {
    let session = if session == "R" { "edge" } else { session };
    json!({
        "seq": seq,
        "ts": format!("2026-11-03T10:00:{:02}.000Z", seq % 60),
        "root": "edge",
        "session": session,
        "turn": turn,
        "type": typ,
        "data": data,
    })
    .to_string()
}

pub type Edge = (u64, &'static str, Option<&'static str>, &'static str, Value);

pub fn edge_cases() -> Vec<(&'static str, Vec<Edge>)> {
    vec![
        (
            "the last event of an unsettled attempt settles another attempt",
            vec![
                (
                    1,
                    "R",
                    None,
                    "run.started",
                    json!({"run_id": "a", "attempt": 1}),
                ),
                (
                    2,
                    "R",
                    None,
                    "run.started",
                    json!({"run_id": "b", "attempt": 1}),
                ),
                (3, "R", None, "text/delta", json!({"text": "hi"})),
                (
                    4,
                    "R",
                    None,
                    "run.completed",
                    json!({"run_id": "a", "attempt": 1, "output": {"status": "COMPLETED"}}),
                ),
            ],
        ),
        (
            "only the last root turn end decides: a malformed one after a good one",
            vec![
                (
                    1,
                    "R",
                    None,
                    "inbox/receipt",
                    json!({"message_id": "m1", "kind": "prompt"}),
                ),
                (2, "R", Some("t1"), "turn/start", json!({})),
                (
                    3,
                    "R",
                    Some("t1"),
                    "turn/end",
                    json!({"reason": {"kind": "completed"}}),
                ),
                (4, "R", Some("t2"), "turn/start", json!({})),
                (
                    5,
                    "R",
                    Some("t2"),
                    "turn/end",
                    json!({"reason": {"kind": 3}}),
                ),
                (6, "R", None, "agent/idle", json!({})),
                (
                    7,
                    "R",
                    None,
                    "inbox/receipt",
                    json!({"message_id": "m2", "kind": "prompt"}),
                ),
                (
                    8,
                    "R",
                    Some("t3"),
                    "turn/end",
                    json!({"reason": "completed"}),
                ),
            ],
        ),
        (
            "a root turn end naming no turn, and a subagent's end after it",
            vec![
                (
                    1,
                    "R",
                    None,
                    "inbox/receipt",
                    json!({"message_id": "m1", "kind": "prompt"}),
                ),
                (
                    2,
                    "R",
                    None,
                    "turn/end",
                    json!({"reason": {"kind": "max_tokens"}}),
                ),
                (
                    3,
                    "s1",
                    Some("x"),
                    "turn/end",
                    json!({"reason": {"kind": "failed"}}),
                ),
                (5, "R", None, "agent/idle", json!({})),
                (6, "R", None, "agent/idle", json!({})),
            ],
        ),
        (
            "a grandchild's callback blocks the turn that spawned its parent",
            vec![
                (1, "R", Some("t1"), "turn/start", json!({})),
                (
                    2,
                    "s1",
                    None,
                    "session/start",
                    json!({"parent": "edge", "parent_turn": "t1"}),
                ),
                (3, "s2", None, "session/start", json!({"parent": "s1"})),
                (
                    4,
                    "s2",
                    Some("u1"),
                    "callback/open",
                    json!({"callback_id": "c1", "kind": "approval", "title": "Allow?"}),
                ),
                (
                    5,
                    "s2",
                    None,
                    "callback/open",
                    json!({"callback_id": "c2", "kind": "sign_in"}),
                ),
                (
                    6,
                    "s2",
                    Some("u1"),
                    "callback/answer",
                    json!({"callback_id": "c1"}),
                ),
            ],
        ),
        (
            "a session/start names its spawning turn before that turn's first event",
            vec![
                (
                    1,
                    "s1",
                    None,
                    "session/start",
                    json!({"parent": "edge", "parent_turn": "t1"}),
                ),
                (
                    2,
                    "s1",
                    Some("u1"),
                    "callback/open",
                    json!({"callback_id": "c1", "kind": "approval"}),
                ),
                (3, "R", Some("t1"), "turn/start", json!({})),
                (4, "R", Some("t1"), "text/delta", json!({"text": "waiting"})),
            ],
        ),
        (
            "a callback opened before its session's session/start",
            vec![
                (1, "R", Some("t1"), "turn/start", json!({})),
                (
                    2,
                    "s1",
                    Some("u1"),
                    "callback/open",
                    json!({"callback_id": "c1", "kind": "approval"}),
                ),
                (
                    3,
                    "s1",
                    None,
                    "session/start",
                    json!({"parent": "edge", "parent_turn": "t1"}),
                ),
            ],
        ),
        (
            "callback ids reused: an answer closes the earliest open one",
            vec![
                (1, "R", Some("t1"), "turn/start", json!({})),
                (
                    2,
                    "R",
                    Some("t1"),
                    "callback/open",
                    json!({"callback_id": "c", "kind": "approval"}),
                ),
                (
                    3,
                    "R",
                    Some("t1"),
                    "callback/open",
                    json!({"callback_id": "c", "kind": "approval"}),
                ),
                (
                    4,
                    "R",
                    Some("t1"),
                    "callback/answer",
                    json!({"callback_id": "c"}),
                ),
                (5, "R", Some("t2"), "turn/start", json!({})),
                (
                    6,
                    "R",
                    Some("t2"),
                    "callback/open",
                    json!({"callback_id": "d", "kind": "quiz"}),
                ),
                (
                    7,
                    "R",
                    Some("t2"),
                    "turn/end",
                    json!({"reason": {"kind": "completed"}}),
                ),
                (
                    8,
                    "R",
                    Some("t2"),
                    "callback/answer",
                    json!({"callback_id": "d"}),
                ),
            ],
        ),
        (
            "a model error after its turn ended Completed, and one before",
            vec![
                (1, "R", Some("t1"), "turn/start", json!({})),
                (
                    2,
                    "R",
                    Some("t1"),
                    "model/end",
                    json!({"error": {"code": "completion_unavailable", "message": "503", "retryable": true, "details": {"http_status": 503}}}),
                ),
                (
                    3,
                    "R",
                    Some("t1"),
                    "model/end",
                    json!({"usage": {"input_tokens": 10, "output_tokens": 2}}),
                ),
                (
                    4,
                    "R",
                    Some("t1"),
                    "turn/end",
                    json!({"reason": {"kind": "end_turn"}, "text": "ok"}),
                ),
                (
                    5,
                    "R",
                    Some("t1"),
                    "model/end",
                    json!({"error": {"code": "completion_rate_limited", "message": "429", "details": {"http_status": 503}}}),
                ),
            ],
        ),
        (
            "an interrupted turn whose session was cancelled while it ran; deltas after its end",
            vec![
                (
                    1,
                    "s1",
                    None,
                    "session/start",
                    json!({"parent": "edge", "parent_turn": null}),
                ),
                (2, "s1", Some("u1"), "turn/start", json!({})),
                (3, "s1", Some("u1"), "text/delta", json!({"text": "half"})),
                (4, "s1", None, "session/end", json!({"status": "cancelled"})),
                (
                    5,
                    "s1",
                    Some("u1"),
                    "turn/end",
                    json!({"reason": {"kind": "interrupted"}}),
                ),
                (
                    6,
                    "s1",
                    Some("u1"),
                    "text/delta",
                    json!({"text": " and more"}),
                ),
                (7, "s1", Some("u2"), "turn/start", json!({})),
                (
                    8,
                    "s1",
                    Some("u2"),
                    "turn/end",
                    json!({"reason": {"kind": "replaced", "reason": {"kind": "steer"}}}),
                ),
            ],
        ),
        (
            "seq gaps inside and at the bounds of an interval, and outside it",
            vec![
                (1, "R", None, "session/start", json!({"parent": null})),
                (
                    3,
                    "R",
                    None,
                    "inbox/receipt",
                    json!({"message_id": "m1", "kind": "prompt"}),
                ),
                (5, "R", Some("t1"), "turn/start", json!({})),
                (
                    6,
                    "R",
                    Some("t1"),
                    "turn/end",
                    json!({"reason": {"kind": "completed"}}),
                ),
                (9, "R", None, "agent/idle", json!({})),
                (
                    12,
                    "R",
                    None,
                    "log",
                    json!({"level": "info", "message": "bye"}),
                ),
            ],
        ),
    ]
}
