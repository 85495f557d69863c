//! The payload readers against serde_json's answers.

use super::index::{nested_of, top_level};
use super::scan::{quote_or_backslash, structural};
use super::*;
use crate::event::Kind;

/// What serde_json's map reading says: the reference the walker must agree with.
fn reference<'a>(data: &'a str, key: &str) -> Option<&'a str> {
    let map: BTreeMap<Cow<'a, str>, &'a RawValue> = serde_json::from_str(data).ok()?;
    map.get(key).map(|v| v.get())
}

#[test]
fn agrees_with_serde_json() {
    let cases = [
        r#"{}"#,
        r#"  { }  "#,
        r#"{"text":"hello"}"#,
        r#"{"text":"h\"e\\llo","n":1}"#,
        r#"{ "a" : [1, {"b": "]}"}], "text" : "x" , "c":null }"#,
        r#"{"text":"first","text":"second"}"#,
        r#"{"te\u0078t":"escaped key"}"#,
        r#"{"usage":{"input_tokens":5,"output_tokens":7},"error":null}"#,
        r#"{"n":-12,"f":1.5e3,"t":true,"u":false}"#,
        r#"{"nested":{"text":"inner"},"text":"outer"}"#,
        r#"[1,2]"#,
        r#""text""#,
        r#"{"text":"unterminated}"#,
        r#"{"a":1,}"#,
        r#"{"text":"é ü 😀"}"#,
    ];
    for data in cases {
        for key in [
            "text", "a", "n", "f", "t", "u", "usage", "error", "nested", "c",
        ] {
            assert_eq!(
                get(data, key).map(Raw::text),
                reference(data, key),
                "{data} / {key}"
            );
        }
    }
}

#[test]
fn word_scans_agree_with_bytewise_search_at_every_offset() {
    let text = br#"abc{"k":[1,"x\"y",{"z":"]}"}],"q":"w\\"}def"#;
    for start in 0..text.len() {
        for len in 0..=text.len() - start {
            let b = &text[start..start + len];
            for i in 0..=b.len() {
                let naive = |set: &[u8]| (i..b.len()).find(|&j| set.contains(&b[j]));
                assert_eq!(quote_or_backslash(b, i), naive(b"\"\\"), "{b:?} {i}");
                assert_eq!(structural(b, i), naive(b"\"{}[]"), "{b:?} {i}");
            }
            assert_eq!(has_backslash(b), b.contains(&b'\\'), "{b:?}");
        }
    }
}

#[test]
fn nested_members_of_every_length_agree_with_serde_json() {
    // Values long enough for whole words, with brackets and escapes at every offset.
    let filler = "abcdefghijklmnopqrstuvwxyz0123456789";
    for cut in 0..filler.len() {
        let (a, b) = filler.split_at(cut);
        for special in ["", "{", "}", "[", "]", r#"\""#, r"\\", "\"", "Y_y"] {
            let inner = serde_json::to_string(&format!("{a}{special}{b}")).unwrap();
            let data = format!(
                r#"{{"args":{{"p":{inner},"l":[{inner},{{"d":{inner}}}]}},"text":{inner},"n":{cut}}}"#
            );
            for key in ["args", "text", "n", "l"] {
                assert_eq!(
                    get(&data, key).map(Raw::text),
                    reference(&data, key),
                    "{data} / {key}"
                );
            }
        }
    }
}

#[test]
fn reads_values() {
    let d = r#"{"s":"a\nb","p":"plain","i":42,"neg":-3,"f":7.0,"ff":7.5,"big":18446744073709551615,"b":true,"o":{"k":"v"},"z":null}"#;
    let [s, p, i, neg, f, ff, big, b, o, z] =
        fields(d, ["s", "p", "i", "neg", "f", "ff", "big", "b", "o", "z"]);
    assert_eq!(s.unwrap().as_str().as_deref(), Some("a\nb"));
    assert!(matches!(p.unwrap().as_str(), Some(Cow::Borrowed("plain"))));
    assert_eq!(i.unwrap().as_i64(), Some(42));
    assert_eq!(neg.unwrap().as_i64(), Some(-3));
    for n in [
        "0",
        "-0",
        "7",
        "-12",
        "999999999999999999",
        "-999999999999999999",
    ] {
        assert_eq!(Raw(n).as_i64(), Some(n.parse().unwrap()), "{n}");
    }
    assert_eq!(Raw("-").as_i64(), None);
    assert_eq!(Raw("1-2").as_i64(), None);
    assert_eq!(Raw("9999999999999999999").as_i64(), None);
    assert_eq!(f.unwrap().as_i64(), Some(7));
    assert_eq!(ff.unwrap().as_i64(), None);
    assert_eq!(big.unwrap().as_i64(), None);
    assert_eq!(b.unwrap().as_bool(), Some(true));
    assert_eq!(p.unwrap().as_i64(), None);
    assert_eq!(i.unwrap().as_str(), None);
    assert_eq!(
        o.unwrap().get("k").and_then(Raw::string).as_deref(),
        Some("v")
    );
    assert!(z.unwrap().is_null());
    assert_eq!(s.unwrap().get("k"), None);
}

/// Checks `char_len` of the JSON string whose content is `text`; returns the string and
/// its length as serde_json reads it.
fn check_len(text: &str) -> (String, i64) {
    let raw = format!("\"{text}\"");
    let want = serde_json::from_str::<String>(&raw)
        .unwrap()
        .chars()
        .count() as i64;
    assert_eq!(Raw(&raw).char_len(), Some(want), "{raw}");
    (raw, want)
}

#[test]
fn char_len_counts_the_unescaped_string() {
    for text in [
        "",
        "plain",
        r"a\nb",
        r#"q\"uote\\"#,
        "é ü 😀",
        r"\\\\",
        r"\u00e9",
        r"\ud83d\ude00x",
    ] {
        check_len(text);
    }
    assert_eq!(Raw("12").char_len(), None);
    // Strings long enough for whole words, with the specials at every offset.
    let long = "abcdefghijklmnopqrstuvwxyzé😀ü0123456789";
    for cut in 0..long.chars().count() {
        for special in ["", r"\n", r#"\""#, r"\\", r"\u00e9"] {
            let text: String = long.chars().take(cut).collect::<String>()
                + special
                + &long.chars().skip(cut).collect::<String>();
            let (raw, want) = check_len(&text);
            let data = format!("{{\"text\":{raw}}}");
            assert_eq!(member_chars(&data, "text"), Some(want), "{data}");
            let spaced = format!("{{ \"text\" : {raw} }}");
            assert_eq!(member_chars(&spaced, "text"), Some(want), "{spaced}");
            let dup = format!("{{\"text\":{raw},\"text\":\"ab\"}}");
            assert_eq!(member_chars(&dup, "text"), Some(2), "{dup}");
        }
    }
    assert_eq!(member_chars(r#"{"text":5}"#, "text"), None);
    assert_eq!(member_chars(r#"{"other":"x"}"#, "text"), None);
    assert_eq!(member_chars(r#"{"text":"x"#, "text"), None);
}

/// Every kind whose payload the reducer reads, one it does not, and one not listed.
const KINDS: [&str; 16] = [
    "inbox/receipt",
    "session/start",
    "session/end",
    "text/delta",
    "model/end",
    "turn/end",
    "tool/call",
    "tool/result",
    "callback/open",
    "callback/answer",
    "run.started",
    "run.completed",
    "run.failed",
    "run.cancelled",
    "log",
    "x/unlisted",
];

/// [`PayloadIndex::members`] of all of `keys` (one of [`keys`]' lists).
fn read_all<'a>(ix: &PayloadIndex, data: &'a str, keys: &[&str]) -> Vec<Option<Raw<'a>>> {
    match *keys {
        [] => vec![],
        [a] => ix.members(data, [a]).to_vec(),
        [a, b] => ix.members(data, [a, b]).to_vec(),
        [a, b, c] => ix.members(data, [a, b, c]).to_vec(),
        [a, b, c, d] => ix.members(data, [a, b, c, d]).to_vec(),
        _ => unreachable!("at most four keys"),
    }
}

/// Every wanted member of every kind, read through an index, is what reading `data`
/// gives; so is the `text` length. Payloads with escaped and duplicate keys, odd
/// spacing, members of every type, malformed text and one too long to index.
#[test]
fn an_index_reads_what_the_payload_says() {
    let long = format!(r#"{{"text":"{}","call_id":"c"}}"#, "x".repeat(70_000));
    let mut cases: Vec<String> = [
        r#"{}"#,
        r#"  { }  "#,
        r#"{"text":"hello"}"#,
        r#"{"text":"h\"é\\llo"}"#,
        r#"{"text":"\ud83d\ude00"}"#,
        r#"{"text":5}"#,
        r#"{"text":"first","text":"second"}"#,
        r#"{ "text" : "spaced" , "x":[1,{"text":"inner"}] }"#,
        r#"{"te\u0078t":"escaped key","call_id":"c1"}"#,
        r#"{"usage":{"input_tokens":5,"output_tokens":7},"error":{"code":"x"}}"#,
        r#"{"usage":{"output_tokens":7,"x":[],"input_tokens":5,"input_tokens":6}}"#,
        r#"{"usage":5,"usage.input_tokens":3}"#,
        r#"{"usage":{"input_tokens":"5"},"usage":{"output_tokens":1.0}}"#,
        r#"{"reason":{"kind":"end_turn"},"text":"done ü","output":{"a":[1]},"output_error":null}"#,
        r#"{"call_id":"c1","name":"grep","arguments":{"q":"}\""},"status":"ok","detail":"d"}"#,
        r#"{"callback_id":"cb","kind":"approval","title":"T","callback_id":"cb2"}"#,
        r#"{"run_id":"r","attempt":2,"output":{"status":"done"},"error":null}"#,
        r#"{"message_id":"m","parent":null,"parent_turn":"t","status":"cancelled"}"#,
        r#"{"text":"unterminated}"#,
        r#"{"a":1,}"#,
        r#"[1,2]"#,
    ]
    .map(String::from)
    .to_vec();
    cases.push(long);
    for data in &cases {
        for kind in KINDS {
            let ix = PayloadIndex::of(kind, data);
            let k = Kind::of(kind);
            assert_eq!(ix.kind(kind), k);
            let keys = wanted(k);
            let got = read_all(&ix, data, keys);
            for (i, key) in keys.iter().enumerate() {
                let want = match key.split_once('.') {
                    Some((a, b)) => get(data, a).and_then(|v| v.get(b)),
                    None => get(data, key),
                };
                assert_eq!(got[i], want, "{kind} {data} / {key}");
            }
            if keys.contains(&"text") {
                assert_eq!(
                    ix.text_chars(data),
                    member_chars(data, "text"),
                    "{kind} {data}"
                );
            }
            // Without an index, the same answers.
            let none = PayloadIndex::NONE;
            assert_eq!(none.kind(kind), k);
            assert_eq!(none.text_chars(data), member_chars(data, "text"));
            assert_eq!(read_all(&none, data, keys), got);
        }
    }
    // The index is used: a long payload has none, a short one has one.
    assert_eq!(
        PayloadIndex::of("tool/call", &cases[cases.len() - 1]),
        PayloadIndex::NONE
    );
    assert_ne!(
        PayloadIndex::of("tool/call", &cases[11]),
        PayloadIndex::NONE
    );
}

/// The index built from the members the decoder met is the one built by walking the
/// payload: for every kind, payloads with duplicate, escaped and many keys, nesting,
/// spacing, and payloads the decoder leaves to serde_json (no members then).
#[test]
fn an_index_from_the_decoders_members_is_the_walked_one() {
    let many: String = (0..12).map(|i| format!(r#""k{i}":{i},"#)).collect();
    let cases = [
        "{}".to_string(),
        "null".to_string(),
        r#"{"text":"hello"}"#.to_string(),
        r#" { "text" : "h\"é" , "text" : "again" } "#.to_string(),
        r#"{"te\"xt":"escaped key","text":"plain"}"#.to_string(),
        r#"{"te\\xt":1,"call_id":"c","name":"n","arguments":{"a":[1,{"b":"}"}]}}"#.to_string(),
        r#"{"usage":{"input_tokens":5,"output_tokens":7,"input_tokens":9},"error":null}"#
            .to_string(),
        r#"{"usage":{"input_tokens":5},"error":{"code":"x","details":{"http_status":429}}}"#
            .to_string(),
        // The nested members the decoder lists: the last `usage` wins, whatever it is.
        r#"{"usage":{"input_tokens":1},"usage":{"output_tokens":2}}"#.to_string(),
        r#"{"usage":{"input_tokens":1},"usage":null}"#.to_string(),
        r#"{"usage":null,"usage":{"input_tokens":3,"output_tokens":4}}"#.to_string(),
        r#"{"usage":{"input_tokens":1},"usage":"x"}"#.to_string(),
        r#"{"usage":{"usage":{"input_tokens":1},"output_tokens":[2]}}"#.to_string(),
        r#"{"usage" : { "input_tokens" : 5 , "output_tokens" : -7 } }"#.to_string(),
        r#"{"usage":{"input\ttokens":5,"output_tokens":"7","input_tokens":{"a":1}}}"#.to_string(),
        format!(r#"{{"usage":{{{many}"input_tokens":6,"output_tokens":8}}}}"#),
        format!(
            r#"{{"usage":{{"x":"{}","input_tokens":6}}}}"#,
            "y".repeat(300)
        ),
        format!(
            r#"{{"x":"{}","usage":{{"input_tokens":6}}}}"#,
            "y".repeat(300)
        ),
        format!(
            r#"{{"text":"{}","usage":{{"input_tokens":6}}}}"#,
            "x".repeat(70_000)
        ),
        format!(r#"{{"usag":{{"input_tokens":6}},"usages":{{}},{many}"usage":1}}"#),
        r#"{"reason":{"kind":"completed"},"text":"done","output":[1,2],"output_error":"bad"}"#
            .to_string(),
        r#"{"run_id":"r1","attempt":2,"output":{"status":"ok"},"error":{"code":"e"}}"#.to_string(),
        r#"{"callback_id":"cb","kind":"approval","title":"T","x":true,"y":false}"#.to_string(),
        format!(r#"{{{many}"call_id":"last","text":"x"}}"#),
        format!(r#"{{"text":"{}"}}"#, "é".repeat(40_000)),
    ];
    let mut fast = 0;
    for data in &cases {
        for kind in KINDS {
            let line = format!(
                r#"{{"seq":1,"ts":"2026-01-01T00:00:00Z","root":"r","session":"s","type":"{kind}","data":{data}}}"#
            );
            let Some(env) = crate::decode::parse_envelope(line.as_bytes()) else {
                continue;
            };
            fast += 1;
            assert_eq!(
                PayloadIndex::of_members(Kind::of(kind), env.data, &env.members),
                PayloadIndex::of(kind, env.data),
                "{kind} {data}"
            );
        }
    }
    assert_eq!(
        fast,
        cases.len() * KINDS.len(),
        "every case takes the fast path"
    );
    // The nested names, split once, are the lists' own.
    for kind in KINDS {
        let k = Kind::of(kind);
        let keys = wanted(k);
        let n = top_level(k);
        let split: Vec<(&str, &str)> = keys[n..]
            .iter()
            .map(|k| k.split_once('.').expect("a.b"))
            .collect();
        match nested_of(k) {
            None => assert!(split.is_empty(), "{kind}"),
            Some((p, parent, children, first)) => {
                assert_eq!(keys[p], parent);
                assert!(p < n && first == n && parent == Members::NESTED);
                assert_eq!(split.len(), children.len());
                for ((a, b), c) in split.iter().zip(children) {
                    assert_eq!((*a, *b), (parent, *c));
                }
            }
        }
    }
    // Why keys may be compared as written (see `Members::push`).
    for kind in KINDS {
        for key in wanted(Kind::of(kind)) {
            assert!(key
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c == b'_' || c == b'.'));
        }
    }
}
