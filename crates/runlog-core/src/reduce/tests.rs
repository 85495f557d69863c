//! The reducer past the turns it looks through and the results it joins without a map.

use super::*;

fn event(seq: u64, session: &str, turn: Option<&str>, kind: &str, data: &str) -> Event {
    Event {
        seq,
        ts: seq as i64,
        root: "r".into(),
        session: session.into(),
        turn: turn.map(Into::into),
        kind: kind.into(),
        data: data.into(),
        file: 0,
        line: seq,
        index: PayloadIndex::of(kind, data),
    }
}

/// Past 16 turns the reducer finds turns through a map, and past 8 tool results it
/// joins them through one: the rows are what the rules say either way. Turns in two
/// sessions are written to again after many others; a call's first result decides, a
/// result may come before its call, and two calls may share an id.
#[test]
fn many_turns_and_tool_results_are_found() {
    let mut evs = Vec::new();
    let mut seq = 0;
    let mut push =
        |evs: &mut Vec<Event>, session: &str, turn: Option<&str>, kind: &str, data: &str| {
            seq += 1;
            evs.push(event(seq, session, turn, kind, data));
        };
    push(&mut evs, "r", None, "inbox/receipt", "{}");
    push(&mut evs, "c", None, "session/start", r#"{"parent":"r"}"#);
    let session = |k: usize| if k % 2 == 0 { "r" } else { "c" };
    for k in 0..40 {
        let t = format!("t{k}");
        push(&mut evs, session(k), Some(&t), "turn/start", "{}");
        let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(k));
        push(&mut evs, session(k), Some(&t), "text/delta", &text);
    }
    for k in 0..40 {
        let t = format!("t{k}");
        push(
            &mut evs,
            session(k),
            Some(&t),
            "text/delta",
            r#"{"text":"ab"}"#,
        );
    }
    push(
        &mut evs,
        "r",
        Some("t0"),
        "tool/result",
        r#"{"call_id":"early","status":"e"}"#,
    );
    for k in 0..12 {
        let call = format!(r#"{{"call_id":"c{k}","name":"n"}}"#);
        push(&mut evs, "r", Some("t0"), "tool/call", &call);
        let result = format!(r#"{{"call_id":"c{k}","status":"ok{k}"}}"#);
        push(&mut evs, "r", Some("t0"), "tool/result", &result);
    }
    for (kind, data) in [
        ("tool/result", r#"{"call_id":"c3","status":"late"}"#),
        ("tool/call", r#"{"call_id":"early","name":"n"}"#),
        ("tool/call", r#"{"call_id":"dup","name":"n"}"#),
        ("tool/result", r#"{"call_id":"dup","status":"d"}"#),
        ("tool/call", r#"{"call_id":"dup","name":"n"}"#),
        ("tool/call", r#"{"call_id":"none","name":"n"}"#),
    ] {
        push(&mut evs, "r", Some("t0"), kind, data);
    }

    for few in [false, true] {
        // The same log cut to 8 turns and 8 results takes the paths without maps.
        let evs: Vec<Event> = if few {
            evs.iter()
                .filter(|e| {
                    let t = e.turn.as_deref().unwrap_or("t0");
                    t[1..].parse::<usize>().unwrap() < 8 && e.kind != "tool/call"
                })
                .cloned()
                .collect()
        } else {
            evs.clone()
        };
        let d = reduce_agent("r", &evs);
        let turns = if few { 8 } else { 40 };
        assert_eq!(d.turns.len(), turns);
        for (k, row) in d.turns.iter().enumerate() {
            assert_eq!(row.turn.as_str(), format!("t{k}"));
            assert_eq!(row.session.as_str(), session(k));
            assert_eq!(row.text_len, Some(k as i64 + 2), "t{k}");
        }
        if few {
            continue;
        }
        let status: Vec<(String, Option<String>)> = d
            .tool_calls
            .iter()
            .map(|c| {
                let status = c.status.as_deref().map(str::to_string);
                (c.call_id.as_deref().unwrap().to_string(), status)
            })
            .collect();
        let mut want: Vec<(String, Option<String>)> = (0..12)
            .map(|k| (format!("c{k}"), Some(format!("ok{k}"))))
            .collect();
        want.push(("early".into(), Some("e".into())));
        want.push(("dup".into(), Some("d".into())));
        want.push(("dup".into(), Some("d".into())));
        want.push(("none".into(), None));
        assert_eq!(status, want);
    }
}
