//! Fuzz target for the reducer's payload walker (`runlog_core::event::payload`): arbitrary
//! bytes as an event's `data`.
//!
//! The walker is only handed payloads ingest has checked to be JSON objects that serde_json
//! reads, so other inputs are skipped. For the rest, every member it finds
//! must be the one a serde_json map holds (the last of duplicate keys), at the top level and
//! one object down, and every string, length, integer and bool it reads must be serde_json's.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use runlog_core::event::payload::{self, Raw};
use serde_json::value::RawValue;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_object(text, 0);
});

fn check_object(text: &str, depth: usize) {
    let Ok(map) = serde_json::from_str::<BTreeMap<String, &RawValue>>(text) else {
        return;
    };
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    for (key, want) in &map {
        let got = payload::get(text, key);
        assert_eq!(got.map(Raw::text), Some(want.get()), "{key} in {text}");
        let raw = Raw(want.get());
        // Ingest rejects data serde_json cannot read into values (a number out of range).
        let Ok(value) = serde_json::from_str::<Value>(want.get()) else {
            return;
        };
        assert_eq!(raw.string(), value.as_str().map(str::to_owned));
        assert_eq!(
            raw.char_len(),
            value.as_str().map(|s| s.chars().count() as i64)
        );
        let int = value.as_i64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        });
        assert_eq!(raw.as_i64(), int, "{}", want.get());
        assert_eq!(raw.as_bool(), value.as_bool());
        assert_eq!(raw.is_object(), value.is_object());
        assert_eq!(raw.is_null(), value.is_null());
        if depth == 0 && value.is_object() {
            check_object(want.get(), 1);
        }
    }
    // Several keys at once, the way the reducer asks, plus one that is absent.
    if keys.len() >= 2 {
        let [a, b, none] = payload::fields(text, [keys[0], keys[keys.len() - 1], "\u{0}absent"]);
        assert_eq!(a.map(Raw::text), Some(map[keys[0]].get()));
        assert_eq!(b.map(Raw::text), Some(map[keys[keys.len() - 1]].get()));
        assert_eq!(none, None);
    }
    let longest = keys
        .iter()
        .max_by_key(|k| k.len())
        .copied()
        .unwrap_or("text");
    if let Some(n) = payload::member_chars(text, longest) {
        let s = map
            .get(longest)
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok());
        assert_eq!(Some(n), s.map(|s| s.chars().count() as i64));
    }
}
