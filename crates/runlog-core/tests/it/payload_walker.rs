//! The reducer's payload walker (`event::payload`) gives serde_json's answers. Checked on
//! every kept event of generated logs (with anomalies), of the golden cases and of the real
//! samples, top level and one object down, and on every line of those files read as an
//! object: each member the walker finds is the one a serde_json map holds, and each string
//! it reads (and its length) is the one serde_json reads.

use crate::common;

use std::borrow::Cow;
use std::collections::BTreeMap;

use runlog_core::decode::parse_line;
use runlog_core::event::payload::{self, Raw};
use runlog_gen::{agent_lines, GenOptions};
use serde_json::value::RawValue;

fn members(data: &str) -> Option<BTreeMap<String, &RawValue>> {
    serde_json::from_str(data).ok()
}

/// Checks every member of `data` (an object's text) and returns how many it checked.
fn check_object(data: &str, depth: usize) -> usize {
    let Some(map) = members(data) else {
        // Not an object (or not one serde_json reads): the walker finds nothing either.
        assert_eq!(payload::get(data, "text"), None, "{data}");
        return 0;
    };
    let mut n = 0;
    for (key, want) in &map {
        let got = payload::get(data, key).map(Raw::text);
        assert_eq!(got, Some(want.get()), "{key} in {data}");
        let raw = Raw(want.get());
        let as_string: Option<String> = serde_json::from_str(want.get()).ok();
        assert_eq!(raw.string(), as_string, "{key} in {data}");
        assert_eq!(
            raw.char_len(),
            as_string.map(|s| s.chars().count() as i64),
            "{key} in {data}"
        );
        n += 1;
        if depth == 0 && raw.is_object() {
            n += check_object(want.get(), 1);
        }
    }
    assert_eq!(payload::get(data, "no such key"), None);
    n
}

fn check_line(line: &[u8]) -> usize {
    match parse_line(line) {
        Ok(ev) => check_object(&ev.data, 0),
        Err(_) => 0,
    }
}

#[test]
fn generated_payloads_read_as_serde_json_reads_them() {
    let opts = GenOptions {
        agents: 200,
        seed: 5,
        files: 1,
        anomalies: 0.05,
        ..Default::default()
    };
    let mut n = 0;
    for a in 0..opts.agents {
        for line in agent_lines(&opts, a) {
            n += check_line(line.as_bytes());
        }
    }
    assert!(n > 20_000, "{n} members checked");
}

#[test]
fn golden_and_sample_payloads_read_as_serde_json_reads_them() {
    let lines = common::golden_and_sample_lines();
    let n: usize = lines.iter().map(|l| check_line(l)).sum();
    assert!(n > 500, "{n} members checked");
    // The samples are other systems' records: real-world JSON objects to walk as they are.
    let whole: usize = lines
        .iter()
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter(|l| !l.trim().is_empty())
        .map(|l| check_object(l, 0))
        .sum();
    assert!(whole > 5000, "{whole} members checked");
}

#[test]
fn odd_payloads_read_as_serde_json_reads_them() {
    for data in [
        r#"{"text":"a","text":"b"}"#,
        r#"{"te\u0078t":"escaped key","x":1}"#,
        "{ \"text\" :\t\"spaced\" ,\n\"n\" : 1 }",
        r#"{"a":{"b":{"c":[{"text":"deep"}]}},"text":"top"}"#,
        r#"{"s":"\ud83d\ude00 \u00e9 \n \" \\ \/"}"#,
        r#"{"n":1.0,"m":-0,"k":1e2,"big":123456789012345678901234567890}"#,
    ] {
        assert!(check_object(data, 0) > 0, "{data}");
    }
    // A duplicate key: the last one, as a serde_json map keeps it.
    let v: Option<Cow<str>> =
        payload::get(r#"{"text":"a","text":"b"}"#, "text").and_then(Raw::as_str);
    assert_eq!(v.as_deref(), Some("b"));
}
