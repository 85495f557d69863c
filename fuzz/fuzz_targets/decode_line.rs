//! Fuzz target for the line decoder (`runlog_core::decode`): arbitrary bytes as one log line.
//!
//! `parse_line`, `excerpt` and `mask_secrets` must never panic, and what they return must
//! keep their promises (docs/semantics.md §7):
//! - the fast path decodes a line only to the event the general (serde_json) decoder reads;
//! - a kept line is UTF-8, its envelope is exactly what serde_json reads from the line, its
//!   `data` parses as a JSON object (the reducer parses it lazily and would otherwise see `{}`),
//!   and the event written back as a line decodes to the same event;
//! - a line serde_json reads as a valid envelope is kept;
//! - a reject's reason is one short line with no secret left in it;
//! - an excerpt is bounded and shows no secret, not even the start of one the cut splits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runlog_core::{decode, event};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Longest reject reason accepted (it is stored in every reject row and printed on stderr).
const MAX_REASON: usize = 512;

fuzz_target!(|line: &[u8]| {
    check_excerpt(line);
    // The fast path never changes an outcome: what it decodes, the general decoder decodes
    // to the same event; and the public decoder gives exactly the general outcome.
    let general = decode::parse_line_general(line);
    if let Some(fast) = decode::parse_line_fast(line) {
        assert_eq!(Ok(&fast), general.as_ref(), "the fast path disagrees");
    }
    assert_eq!(decode::parse_line(line), general);
    match general {
        Ok(ev) => check_kept(line, &ev),
        Err(reason) => check_rejected(line, &reason),
    }
});

/// The envelope as serde_json reads it: fields other than these are skipped (as the decoder
/// skips them), a field given twice is an error, `null` is `None`.
#[derive(Deserialize)]
struct Envelope {
    seq: Option<Value>,
    ts: Option<Value>,
    root: Option<Value>,
    session: Option<Value>,
    turn: Option<Value>,
    #[serde(rename = "type")]
    kind: Option<Value>,
    data: Option<Value>,
}

fn str_of(v: &Option<Value>) -> Option<&str> {
    v.as_ref().and_then(Value::as_str)
}

fn check_kept(line: &[u8], ev: &event::Event) {
    let text = std::str::from_utf8(line).expect("kept a line that is not UTF-8");
    assert_eq!((ev.file, ev.line), (0, 0));
    assert!(ev.seq < 1 << 63, "seq out of range: {}", ev.seq);
    let data: Map<String, Value> = serde_json::from_str(&ev.data).unwrap_or_else(|e| {
        panic!(
            "kept `data` does not parse as a JSON object ({e}): {:?}",
            ev.data
        )
    });

    // The event is exactly what serde_json reads from the line.
    match serde_json::from_str::<Envelope>(text) {
        Ok(env) => {
            assert_eq!(env.seq.as_ref().and_then(Value::as_u64), Some(ev.seq));
            let ts = str_of(&env.ts).expect("kept without a string ts");
            assert_eq!(decode::parse_ts(ts), Some(ev.ts));
            assert_eq!(str_of(&env.root), Some(ev.root.as_str()));
            assert_eq!(str_of(&env.session), Some(ev.session.as_str()));
            assert_eq!(str_of(&env.kind), Some(ev.kind.as_str()));
            match &env.turn {
                None => assert_eq!(ev.turn, None),
                Some(t) => assert_eq!(t.as_str(), ev.turn.as_deref()),
            }
            match env.data {
                None => assert!(data.is_empty()),
                Some(d) => assert_eq!(d, Value::Object(data.clone())),
            }
        }
        // The line may nest exactly as deep as the decoder allows (128): serde_json's
        // values stop one level short.
        Err(e) => assert!(
            e.to_string().contains("recursion limit exceeded"),
            "kept a line serde_json rejects ({e}): {text:?}"
        ),
    }

    // Written back as a line, the event decodes to itself.
    let ts = chrono::DateTime::from_timestamp_micros(ev.ts)
        .expect("ts out of chrono's range")
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut back = serde_json::json!({
        "seq": ev.seq, "ts": ts, "root": ev.root.as_str(), "session": ev.session.as_str(),
        "type": ev.kind.as_str(), "data": Value::Object(data),
    });
    if let Some(t) = &ev.turn {
        back["turn"] = Value::String(t.to_string());
    }
    let back_line = serde_json::to_vec(&back).unwrap();
    let again = decode::parse_line(&back_line).expect("the event written back is rejected");
    assert_eq!(
        (
            again.seq,
            again.ts,
            &again.root,
            &again.session,
            &again.turn,
            &again.kind
        ),
        (ev.seq, ev.ts, &ev.root, &ev.session, &ev.turn, &ev.kind)
    );
}

fn check_rejected(line: &[u8], reason: &str) {
    assert!(!reason.is_empty());
    assert!(
        reason.len() <= MAX_REASON,
        "reason of {} bytes",
        reason.len()
    );
    assert!(
        !reason.chars().any(char::is_control),
        "control character in {reason:?}"
    );
    assert_eq!(decode::mask_secrets(reason), reason, "secret in the reason");

    // A line serde_json reads as a valid envelope must not be rejected.
    let Ok(text) = std::str::from_utf8(line) else {
        return;
    };
    // (serde would also read a struct from an array; the envelope is an object.)
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return;
    }
    let Ok(env) = serde_json::from_str::<Envelope>(text) else {
        return;
    };
    // Fields the envelope skips are not checked for depth by serde_json, but the decoder's
    // limit holds for the whole line (the `nesting` target checks it to the level).
    if reason.starts_with("nests deeper")
        && serde_json::from_str::<Value>(text)
            .is_err_and(|e| e.to_string().contains("recursion limit exceeded"))
    {
        return;
    }
    let seq_ok = env
        .seq
        .as_ref()
        .and_then(Value::as_u64)
        .is_some_and(|s| s < 1 << 63);
    let ts_ok = str_of(&env.ts).and_then(decode::parse_ts).is_some();
    let strings_ok = [&env.root, &env.session, &env.kind]
        .iter()
        .all(|v| str_of(v).is_some());
    let turn_ok = matches!(env.turn, None | Some(Value::String(_)));
    let data_ok = matches!(env.data, None | Some(Value::Object(_)));
    if seq_ok && ts_ok && strings_ok && turn_ok && data_ok {
        panic!("rejected a valid envelope ({reason}): {text:?}");
    }
}

/// Secret prefixes as `mask_secrets` knows them, and the run of token characters after one
/// that makes it a secret.
fn secret_at(s: &[u8], i: usize) -> Option<usize> {
    let rest = &s[i..];
    if rest.starts_with(b"sk-") || rest.starts_with(b"sk_") {
        Some(3)
    } else if rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"bearer ") {
        Some(7)
    } else if rest.starts_with(b"AKIA") {
        Some(0)
    } else {
        None
    }
}

fn token_run(s: &[u8], from: usize) -> usize {
    let is_tok = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    s[from.min(s.len())..]
        .iter()
        .take_while(|b| is_tok(b))
        .count()
}

fn check_excerpt(line: &[u8]) {
    let ex = decode::excerpt(line);
    // At most EXCERPT_BYTES of the line; invalid bytes become U+FFFD (3 bytes each).
    assert!(
        ex.len() <= 3 * decode::EXCERPT_BYTES + 16,
        "excerpt of {} bytes",
        ex.len()
    );
    if let Ok(s) = std::str::from_utf8(line) {
        let masked = decode::mask_secrets(s);
        assert!(masked.len() <= s.len());
        assert_eq!(
            decode::mask_secrets(&masked),
            masked,
            "masking is not idempotent"
        );
        assert_eq!(decode::mask_secrets(&ex), ex, "secret in the excerpt");
        // No start of a secret either: a run of token characters after a secret prefix that
        // the cut ends must be short in the line itself, not only in the excerpt.
        let (e, l) = (ex.as_bytes(), s.as_bytes());
        if ex.len() < s.len() && !ex.contains("***") && l.starts_with(e) {
            for i in 0..e.len() {
                if let Some(p) = secret_at(e, i) {
                    let shown = token_run(e, i + p);
                    if i + p + shown == e.len() && shown > 0 {
                        assert!(
                            token_run(l, i + p) < 12,
                            "the excerpt shows the start of a secret: {ex:?}"
                        );
                    }
                }
            }
        }
    }
}
