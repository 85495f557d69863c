//! Fuzz target for the decoder's depth limit: the decoder's own bracket count
//! (`nests_deeper_than`, brackets inside strings not counted) against the depth of the value
//! serde_json reads.
//!
//! The input is a JSON value `v` (inputs serde_json rejects are skipped), wrapped in `k`
//! arrays (`k` from the first byte) and put in an envelope's `data`: the line nests
//! `depth(v) + k + 2` deep and must be rejected for its depth exactly when that is over 128,
//! and kept otherwise.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runlog_core::decode;
use serde_json::Value;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&k, json)) = input.split_first() else {
        return;
    };
    let Ok(v) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    let json = std::str::from_utf8(json).unwrap();
    let k = k as usize;
    let line = format!(
        r#"{{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x","data":{{"v":{}{}{}}}}}"#,
        "[".repeat(k),
        json,
        "]".repeat(k)
    );
    let total = depth(&v) + k + 2;
    match decode::parse_line(line.as_bytes()) {
        Ok(_) => assert!(total <= decode::MAX_DEPTH, "kept a line {total} deep"),
        Err(reason) => {
            assert!(
                total > decode::MAX_DEPTH,
                "rejected a line {total} deep: {reason}"
            );
            assert!(reason.contains("nests deeper"), "{reason}");
        }
    }
});
