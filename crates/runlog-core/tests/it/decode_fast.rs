//! The decoder's fast path never changes an outcome: every line it decodes, the general
//! (serde_json) decoder decodes to the same event. Checked on generated logs (with
//! anomalies), on every golden case's input, on the real samples, and on hand-made lines at
//! the edges of the grammar.

use crate::common;

use runlog_core::decode::{parse_line, parse_line_fast, parse_line_general};
use runlog_gen::{agent_lines, GenOptions};

fn check(line: &[u8]) -> bool {
    let general = parse_line_general(line);
    // The public decoder gives exactly the general outcome.
    assert_eq!(
        parse_line(line),
        general,
        "{}",
        String::from_utf8_lossy(line)
    );
    match parse_line_fast(line) {
        Some(ev) => {
            assert_eq!(
                Ok(&ev),
                general.as_ref(),
                "fast path disagrees on {}",
                String::from_utf8_lossy(line)
            );
            true
        }
        None => false,
    }
}

#[test]
fn generated_lines_decode_the_same_and_mostly_fast() {
    let opts = GenOptions {
        agents: 300,
        seed: 11,
        files: 1,
        anomalies: 0.05,
        ..Default::default()
    };
    let (mut total, mut fast, mut kept) = (0, 0, 0);
    for a in 0..opts.agents {
        for line in agent_lines(&opts, a) {
            total += 1;
            kept += parse_line_general(line.as_bytes()).is_ok() as usize;
            fast += check(line.as_bytes()) as usize;
        }
    }
    assert!(total > 10_000, "{total} lines");
    // The generator writes the common shape: nearly every kept line takes the fast path.
    assert!(fast * 100 >= kept * 95, "{fast} of {kept} kept lines fast");
}

#[test]
fn golden_and_sample_lines_decode_the_same() {
    let lines = common::golden_and_sample_lines();
    assert!(lines.len() > 1000, "{} lines", lines.len());
    let fast = lines.iter().filter(|l| check(l)).count();
    assert!(fast > 0);
}

#[test]
fn edges_of_the_grammar_decode_the_same() {
    let head = r#""seq":1,"ts":"2026-11-03T10:00:00.123Z","root":"r","session":"s","type":"t""#;
    let with = |extra: &str| format!("{{{head}{extra}}}");
    let mut lines: Vec<String> = vec![
        format!("{{{head}}}"),
        format!("  {{ {head} }}  "),
        format!("{{{head}}}\r"),
        with(r#","data":null"#),
        with(r#","data":{}"#),
        with(r#","data": { "a" : [ 1 , -2.5 , true , false , null , "x" ] } "#),
        with(r#","data":{"a":1e5}"#),
        with(r#","data":{"a":1E-5}"#),
        with(r#","data":{"a":01}"#),
        with(r#","data":{"a":-}"#),
        with(r#","data":{"a":1.}"#),
        with(r#","data":{"a":.5}"#),
        with(r#","data":{"a":[1,]}"#),
        with(r#","data":{"a":1,}"#),
        with(r#","data":{"a" 1}"#),
        with(r#","data":{"a":tru}"#),
        with(r#","data":{"a":"\ud800"}"#),
        with(r#","data":{"a":"\u00e9\n\t\"\\\/"}"#),
        with(r#","data":{"a":"\x"}"#),
        with("\",\"data\":{\"a\":\"tab\there\"}"),
        with(r#","data":[1]"#),
        with(r#","data":"x""#),
        with(r#","data":{},"data":{}"#),
        with(r#","turn":null"#),
        with(r#","turn":"u1""#),
        with(r#","turn":5"#),
        with(r#","turn":"a","turn":"b""#),
        with(r#","seq":2"#),
        with(r#","extra":{"deep":[[[[{"x":1}]]]]},"more":"m""#),
        with(r#","se\u0071x":1"#),
        format!("{{{head},}}"),
        format!("{{{head}}} x"),
        format!("{{{head}}}{{}}"),
        r#"{"seq":01,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":-1,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":1.0,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":1e2,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":9223372036854775807,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":9223372036854775808,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":99999999999999999999,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-11-03T10:00:00+05:30","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-11-03T10:00:00","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-02-30T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-11-03t10:00:00z","root":"r","session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"r\"q","session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":null,"session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","session":"s","type":"t"}"#.into(),
        r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"é","session":"s","type":"ü"}"#.into(),
        r#"{}"#.into(),
        r#"{"#.into(),
        r#"[]"#.into(),
    ];
    // The common order with a turn, then every way of leaving it: spaces, a field out of
    // order or given twice, a turn of another type, a cut line.
    let ts = r#""ts":"2026-11-03T10:00:00.123Z""#;
    for l in [
        format!(
            r#"{{"seq":1,{ts},"root":"r","session":"s","turn":"u","type":"t","data":{{"a":1}}}}"#
        ),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","turn":null,"type":"t","data":{{}}}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","turn":nul,"type":"t"}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","turn":5,"type":"t"}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","turn":"u","turn":"v","type":"t"}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","data":{{}},"data":{{}}}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","data":{{}},"x":[1]}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","data":null}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","seq":1}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","root":"r"}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","type":"t"}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t" , "data" : {{}} }}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","type":"t","session":"s"}}"#),
        format!(r#"{{"seq":1,{ts},"session":"s","root":"r","type":"t"}}"#),
        format!(r#"{{"seq":1,"root":"r",{ts},"session":"s","type":"t"}}"#),
        format!(r#"{{"seq":1,{ts},{ts},"root":"r","session":"s","type":"t"}}"#),
        format!(r#"{{"seq": 1,{ts},"root":"r","session":"s","type":"t"}}"#),
        format!(r#"{{"seq":1 ,{ts},"root":"r","session":"s","type":"t"}}"#),
        format!(r#"{{"seq":1, {ts},"root": "r","session":"s","type":"t"}}"#),
        r#"{"seq":1,"ts": "2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.to_string(),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","turn": "u","type": "t"}}"#),
        r#"{"seq":1,"ts":5,"root":"r","session":"s","type":"t"}"#.to_string(),
        format!(r#"{{"seq":1,{ts},"root":"r\u0041","session":"s","type":"t"}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","data":{{"a":}}}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t","data":{{"a":1}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t"}}}}"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"t""#),
        format!(r#"{{"seq":1,{ts},"root":"r","session":"s","type":"#),
        format!(r#"{{"seq":1,{ts},"root":"r","session""#),
        format!(r#"{{"seq":1,{ts}"#),
        r#"{"seq":1"#.to_string(),
        r#"{"seq":"#.to_string(),
        r#"{"seq":x}"#.to_string(),
        r#"{"seq":01,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"t"}"#.into(),
    ] {
        lines.push(l);
    }
    // Nesting around the fast path's and the decoder's limits.
    for depth in [60, 63, 64, 65, 127, 128, 129] {
        let open = "[".repeat(depth);
        let close = "]".repeat(depth);
        lines.push(with(&format!(r#","data":{{"x":{open}{close}}}"#)));
    }
    // Long numbers and strings.
    lines.push(with(&format!(r#","data":{{"x":{}}}"#, "9".repeat(63))));
    lines.push(with(&format!(r#","data":{{"x":{}}}"#, "9".repeat(400))));
    lines.push(with(&format!(r#","data":{{"x":"{}"}}"#, "9".repeat(400))));
    lines.push(with(&format!(r#","data":{{"x":"{}"}}"#, "é".repeat(100))));
    let mut fast = 0;
    for l in &lines {
        fast += check(l.as_bytes()) as usize;
    }
    assert!(fast >= 20, "{fast} lines took the fast path");
}

/// Importers mark deduced turn ends and idles `inferred: true`, and the reducer asks every
/// turn end and idle through its payload index: the index's answer (built by either
/// decoder) is serde_json's reading of the top-level member.
#[test]
fn the_index_reads_inferred_as_serde_json_does() {
    let mut n = 0;
    for ty in ["turn/end", "agent/idle", "turn/start"] {
        for data in [
            r#"{"inferred":true}"#,
            r#"{"inferred":false}"#,
            r#"{"reason":{"kind":"completed"},"text":"done","inferred":true}"#,
            r#"{"reason":{"kind":"completed","inferred":true}}"#,
            r#"{"x":"\"inferred\":true"}"#,
            r#"{"infer\u0072ed":true}"#,
            r#"{"inferred":true,"inferred":false}"#,
            r#"{"inferred":false,"inferred":true}"#,
            r#"{"inferred":"true"}"#,
            r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"inferred":true}"#,
            "{}",
        ] {
            let line = format!(
                r#"{{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"r","session":"s","type":"{ty}","data":{data}}}"#
            );
            check(line.as_bytes());
            let ev = parse_line(line.as_bytes()).unwrap();
            let map: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&ev.data).unwrap();
            let want = map.get("inferred") == Some(&serde_json::Value::Bool(true));
            assert_eq!(ev.index.inferred(&ev.data), want, "{line}");
            if let Some(fast) = parse_line_fast(line.as_bytes()) {
                assert_eq!(fast.index.inferred(&fast.data), want, "fast: {line}");
            }
            n += want as usize;
        }
    }
    assert_eq!(n, 3 * 5, "lines that say inferred: true");
}

/// The reader decodes through the fast path with ids shared per file: every event it keeps
/// is the event `parse_line` reads from that line, and within the file equal ids are one
/// pointer (what makes an event 88 bytes instead of 152).
#[test]
fn the_reader_keeps_the_decoders_events_with_shared_ids() {
    use runlog_core::event::Id;
    use runlog_core::ingest::{read_stream, IngestOptions};
    let opts = GenOptions {
        agents: 40,
        seed: 5,
        files: 1,
        anomalies: 0.05,
        ..Default::default()
    };
    let lines: Vec<String> = (0..opts.agents)
        .flat_map(|a| agent_lines(&opts, a))
        .collect();
    let text = lines.join("\n");
    let read = read_stream(0, "gen.jsonl", text.as_bytes(), &IngestOptions::default()).unwrap();
    let events: Vec<_> = read.grouped.iter().flat_map(|g| &g.events).collect();
    let expected = lines
        .iter()
        .filter(|l| parse_line(l.as_bytes()).is_ok())
        .count();
    assert!(events.len() > 1000, "{} events", events.len());
    assert_eq!(events.len(), expected, "every decodable line kept once");
    let mut by_text: std::collections::HashMap<&str, &Id> = Default::default();
    let mut shared = 0;
    for ev in &events {
        let line = lines[ev.line as usize - 1].as_bytes();
        let mut decoded = parse_line(line).unwrap();
        decoded.file = ev.file;
        decoded.line = ev.line;
        assert_eq!(**ev, decoded, "line {}", ev.line);
        for id in [
            Some(&ev.root),
            Some(&ev.session),
            ev.turn.as_ref(),
            Some(&ev.kind),
        ]
        .into_iter()
        .flatten()
        {
            let first = *by_text.entry(id.as_str()).or_insert(id);
            if Id::ptr_eq(first, id) {
                shared += 1;
            } else {
                // Only the general decoder's events (the fast path said "not sure") own
                // their ids.
                assert!(
                    runlog_core::decode::parse_line_fast(line).is_none(),
                    "{:?} not shared on line {}",
                    id.as_str(),
                    ev.line
                );
            }
        }
    }
    assert!(shared > 3 * events.len(), "{shared} shared ids");
}
