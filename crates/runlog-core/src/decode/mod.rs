//! The line decoder: one line's bytes → an [`Event`] (docs/events.md envelope) or the reason it
//! is rejected, plus the masked excerpt kept with a reject (docs/semantics.md §7).
//!
//! It depends only on std, serde, serde_json, chrono and [`crate::event`]; the fuzz
//! targets (`fuzz/fuzz_targets/`) link the core crate and call it as it is.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::event::{Event, Kind, PayloadIndex};

mod fast;
pub use fast::{parse_ts_common, peek_head, Envelope, Head, LastMinute};

/// Bytes of a rejected line kept as its excerpt.
pub const EXCERPT_BYTES: usize = 200;

/// Bytes after the cut of an excerpt still read to recognise a secret the cut splits: a
/// caller that keeps only the start of a line for its excerpt keeps
/// `EXCERPT_BYTES + SECRET_LOOKAHEAD` bytes.
pub const SECRET_LOOKAHEAD: usize = 32;

/// The first bytes of a line, as text, with secrets masked.
///
/// A secret that starts before the cut is masked whole (it is recognised by reading a few
/// bytes past the cut), never shown in part.
pub fn excerpt(line: &[u8]) -> String {
    let end = utf8_cut(line, EXCERPT_BYTES);
    let more = utf8_cut(&line[end..], SECRET_LOOKAHEAD);
    let shown = String::from_utf8_lossy(&line[..end]);
    let after = String::from_utf8_lossy(&line[end..end + more]);
    mask_until(&format!("{shown}{after}"), shown.len())
}

/// `line.len().min(max)`, moved back to a character boundary when that splits a character
/// of a line that is UTF-8 up to there.
fn utf8_cut(line: &[u8], max: usize) -> usize {
    let end = line.len().min(max);
    match std::str::from_utf8(&line[..end]) {
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        _ => end,
    }
}

/// Masks substrings that look like API keys or bearer tokens.
pub fn mask_secrets(s: &str) -> String {
    mask_until(s, s.len())
}

/// `s[..stop]` with secrets masked, where a secret starting before `stop` is recognised
/// (and masked) by reading `s` past `stop`.
fn mask_until(s: &str, stop: usize) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(stop);
    let mut i = 0;
    let is_tok = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.';
    while i < stop {
        let rest = &s[i..];
        let prefix_len = if rest.starts_with("sk-") || rest.starts_with("sk_") {
            3
        } else if rest.len() >= 7 && rest.as_bytes()[..7].eq_ignore_ascii_case(b"bearer ") {
            7
        } else if rest.starts_with("AKIA") {
            0
        } else {
            usize::MAX
        };
        if prefix_len != usize::MAX {
            let start = i + prefix_len;
            let mut j = start;
            while j < bytes.len() && is_tok(bytes[j]) {
                j += 1;
            }
            if j - start >= 12 {
                out.push_str(&s[i..start]);
                out.push_str("***");
                i = j;
                continue;
            }
        }
        let ch = rest.chars().next().unwrap_or('\0');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
}

#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow, default)]
    seq: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    root: Option<&'a RawValue>,
    #[serde(borrow, default)]
    session: Option<&'a RawValue>,
    #[serde(borrow, default)]
    turn: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

/// Parses one line's envelope into an event (with `file`/`line` left 0), or says why not.
///
/// Lines in the common shape take a fast path; the rest, and every line the fast path is
/// not sure of, take the general one ([`parse_line_general`]), which decides alone.
pub fn parse_line(line: &[u8]) -> std::result::Result<Event, String> {
    match parse_envelope(line) {
        Some(env) => Ok(env.to_event()),
        None => parse_line_general(line),
    }
}

/// The fast path alone: `Some` only for a line in the common shape (see `decode/fast.rs`),
/// which [`parse_line_general`] must decode to the same event (the fuzz target checks it).
pub fn parse_line_fast(line: &[u8]) -> Option<Event> {
    parse_envelope(line).map(|env| env.to_event())
}

/// The fast path's envelope of a line in the common shape, borrowing the line; `None`
/// means only "not sure": [`parse_line_general`] decides.
pub fn parse_envelope(line: &[u8]) -> Option<Envelope<'_>> {
    fast::parse_common(text(line)?)
}

/// [`parse_envelope`] for the next line of a log whose last timestamp's minute is `last`
/// (updated as it reads): the same answer, sooner.
pub fn parse_envelope_after<'l>(line: &'l [u8], last: &mut LastMinute) -> Option<Envelope<'l>> {
    fast::parse_common_after(text(line)?, last)
}

/// `line` as text, if it is valid UTF-8. Most lines are ASCII, which [`fast::is_ascii`]
/// confirms in a quarter of the instructions of `from_utf8` (callgrind: 2.3% of an ingest).
pub(crate) fn text(line: &[u8]) -> Option<&str> {
    if fast::is_ascii(line) {
        // SAFETY: ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(line) })
    } else {
        std::str::from_utf8(line).ok()
    }
}

impl Envelope<'_> {
    /// The event, with ids of its own (the reader shares them instead: `ingest::Ids`).
    pub fn to_event(&self) -> Event {
        Event {
            seq: self.seq,
            ts: self.ts,
            root: self.root.into(),
            session: self.session.into(),
            turn: self.turn.map(Into::into),
            kind: self.kind.into(),
            data: self.data.into(),
            file: 0,
            line: 0,
            index: PayloadIndex::of_members(Kind::of(self.kind), self.data, &self.members),
        }
    }
}

/// The general decoder: serde_json reads the envelope, and every reject reason comes from
/// here. [`parse_line`] gives the same outcome for every line, only faster.
pub fn parse_line_general(line: &[u8]) -> std::result::Result<Event, String> {
    let text = match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => return Err(format!("not valid UTF-8 (byte {})", e.valid_up_to() + 1)),
    };
    if nests_deeper_than(line, MAX_DEPTH) {
        return Err(format!("nests deeper than {MAX_DEPTH} levels"));
    }
    let first = text.trim_start().as_bytes().first().copied();
    if first != Some(b'{') {
        // Distinguish "valid JSON but not an object" from "not JSON".
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => format!("not a JSON object (a JSON {})", json_kind(text)),
            Err(e) => format!("not valid JSON: {}", json_err(&e)),
        });
    }
    let env: RawEnvelope = serde_json::from_str(text).map_err(|e| {
        if e.is_data() {
            format!("bad envelope: {}", json_err(&e))
        } else {
            format!("not valid JSON: {}", json_err(&e))
        }
    })?;
    let seq = match env.seq {
        None => return Err("missing required field `seq`".into()),
        Some(raw) => parse_seq(raw.get())?,
    };
    let ts_text = required_string(env.ts, "ts")?;
    let ts = parse_ts(&ts_text).ok_or_else(|| {
        format!(
            "`ts` is not an RFC 3339 timestamp with an offset: {:?}",
            quote(&ts_text)
        )
    })?;
    let root = required_string(env.root, "root")?.into_owned();
    let session = required_string(env.session, "session")?.into_owned();
    let kind = required_string(env.kind, "type")?.into_owned();
    let turn = match env.turn {
        None => None,
        Some(raw) => Some(
            as_string(raw)
                .ok_or_else(|| {
                    format!(
                        "`turn` must be a string or null, found {}",
                        json_kind(raw.get())
                    )
                })?
                .into_owned(),
        ),
    };
    let data = match env.data {
        None => "{}".to_string(),
        Some(raw) if raw.get().starts_with('{') => {
            check_data(raw.get())?;
            raw.get().to_string()
        }
        Some(raw) => {
            return Err(format!(
                "`data` must be an object or null, found {}",
                json_kind(raw.get())
            ))
        }
    };
    let index = PayloadIndex::of(&kind, &data);
    Ok(Event {
        seq,
        ts,
        root: root.into(),
        session: session.into(),
        turn: turn.map(Into::into),
        kind: kind.into(),
        data: data.into(),
        file: 0,
        line: 0,
        index,
    })
}

/// Deepest nesting of arrays and objects accepted in a line (docs/semantics.md §7).
pub const MAX_DEPTH: usize = 128;

/// Whether the arrays and objects of a line nest deeper than `limit` (the line itself,
/// an object, is level 1). Brackets inside strings do not count. serde_json does not
/// check depth where the envelope holds raw values, so it is checked here.
fn nests_deeper_than(line: &[u8], limit: usize) -> bool {
    // Fast path (vectorised count): a line with few brackets cannot nest deeply.
    let opens = line
        .iter()
        .fold(0usize, |n, &b| n + ((b == b'[') | (b == b'{')) as usize);
    if opens <= limit {
        return false;
    }
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for &b in line {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Checks that `data` can be read the way every stage after ingest reads it (serde_json into
/// values). The envelope's parse only checks its syntax, which lets through two things that
/// reading refuses: a `\u` escape that is a lone surrogate and a number too large for an
/// f64. Kept, such an event would reach the reducer as an empty payload, silently. Only
/// data that could hold either (a `\u`, an exponent, a long run of digits) is read again.
fn check_data(data: &str) -> std::result::Result<(), String> {
    if !may_be_unreadable(data.as_bytes()) {
        return Ok(());
    }
    serde_json::from_str::<Readable>(data)
        .map(|_| ())
        .map_err(|e| {
            let s = e.to_string();
            // The position is within `data`, not the line: leave it out.
            let msg = s.rfind(" at line ").map_or(&s[..], |i| &s[..i]);
            format!("`data` cannot be read as JSON: {msg}")
        })
}

/// Whether `data` holds a `\u` escape, a digit followed by an exponent or 300 digits in a
/// row (bytes inside strings count too: a false alarm only costs a second read).
fn may_be_unreadable(data: &[u8]) -> bool {
    let mut digits = 0;
    let mut prev = 0u8;
    for &b in data {
        if b.is_ascii_digit() {
            digits += 1;
            if digits >= 300 {
                return true;
            }
        } else {
            if (digits > 0 && (b == b'e' || b == b'E')) || (b == b'u' && prev == b'\\') {
                return true;
            }
            digits = 0;
        }
        prev = b;
    }
    false
}

/// Any JSON value, read in full (strings decoded, numbers converted) and thrown away.
struct Readable;

impl<'de> Deserialize<'de> for Readable {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(Readable)
    }
}

impl<'de> serde::de::Visitor<'de> for Readable {
    type Value = Readable;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_unit<E>(self) -> std::result::Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut a: A,
    ) -> std::result::Result<Readable, A::Error> {
        while a.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut a: A,
    ) -> std::result::Result<Readable, A::Error> {
        while a.next_entry::<Readable, Readable>()?.is_some() {}
        Ok(Readable)
    }
}

/// Bytes of a value from the line quoted in a reject reason.
const QUOTED_BYTES: usize = 64;

/// A value from the line as a reject reason quotes it: cut short, with secrets masked (the
/// excerpt is capped and masked; the reason must not carry the value whole instead).
fn quote(v: &str) -> String {
    let cut = utf8_cut(v.as_bytes(), QUOTED_BYTES);
    let mut q = mask_until(v, cut);
    if cut < v.len() {
        q.push('…');
    }
    q
}

fn json_err(e: &serde_json::Error) -> String {
    // serde_json appends " at line L column C"; the line is always 1 here.
    let s = e.to_string();
    match s.rfind(" at line 1 column ") {
        Some(i) => format!("{} at column {}", &s[..i], &s[i + 18..]),
        None => s,
    }
}

fn json_kind(raw: &str) -> &'static str {
    match raw.trim_start().as_bytes().first() {
        Some(b'"') => "string",
        Some(b'[') => "array",
        Some(b'{') => "object",
        Some(b't') | Some(b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

fn as_string(raw: &RawValue) -> Option<Cow<'_, str>> {
    if raw.get().starts_with('"') {
        serde_json::from_str::<Cow<str>>(raw.get()).ok()
    } else {
        None
    }
}

fn required_string<'a>(
    raw: Option<&'a RawValue>,
    name: &str,
) -> std::result::Result<Cow<'a, str>, String> {
    match raw {
        None => Err(format!("missing required field `{name}`")),
        Some(r) => as_string(r)
            .ok_or_else(|| format!("`{name}` must be a string, found {}", json_kind(r.get()))),
    }
}

fn parse_seq(raw: &str) -> std::result::Result<u64, String> {
    // The raw JSON may hold whitespace such as `\r` or `\t`: the reason is one line. The
    // control characters go before the secrets are masked, so that none is made of them.
    let bad = || {
        let shown = quote(&raw.replace(|c: char| c.is_control(), " "));
        format!("`seq` must be an integer in 0..2^63, found {shown}")
    };
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match raw.parse::<u64>() {
        Ok(v) if v < (1u64 << 63) => Ok(v),
        _ => Err(bad()),
    }
}

/// Parses an RFC 3339 timestamp with an offset into microseconds since the epoch (UTC).
pub fn parse_ts(s: &str) -> Option<i64> {
    if let Some(t) = parse_ts_common(s.as_bytes()) {
        return Some(t);
    }
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_errors_name_the_field() {
        let ok =
            br#"{"seq":1,"ts":"2026-11-03T10:00:00.000Z","root":"s1","session":"s1","type":"x"}"#;
        let ev = parse_line(ok).unwrap();
        assert_eq!(ev.seq, 1);
        assert_eq!(ev.data, "{}");
        assert_eq!(ev.ts, 1_793_700_000_000_000);
        let cases: &[(&[u8], &str)] = &[
            (b"[1]", "not a JSON object"),
            (b"{\"seq\":", "not valid JSON"),
            (br#"{"seq":-1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x"}"#, "`seq` must be an integer"),
            (br#"{"seq":1.5,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x"}"#, "`seq` must be an integer"),
            (br#"{"seq":9223372036854775808,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x"}"#, "`seq` must be an integer"),
            (br#"{"seq":1,"ts":"2026-11-03 10:00:00","root":"a","session":"a","type":"x"}"#, "RFC 3339"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00","root":"a","session":"a","type":"x"}"#, "RFC 3339"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":5,"session":"a","type":"x"}"#, "`root` must be a string"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","type":"x"}"#, "missing required field `session`"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","turn":3,"type":"x"}"#, "`turn` must be a string or null"),
            (br#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"x","data":[1]}"#, "`data` must be an object"),
            (b"{\"seq\":1,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\xff\"}", "not valid UTF-8"),
        ];
        for (line, want) in cases {
            let err = parse_line(line).unwrap_err();
            assert!(
                err.contains(want),
                "{:?}: got {err:?}, want {want:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn deep_nesting_is_rejected() {
        let deep = format!(
            "{{\"seq\":1,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\",\"session\":\"a\",\"type\":\"x\",\"data\":{{\"v\":{}{}}}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(parse_line(deep.as_bytes()).is_err());
        let ok = format!(
            "{{\"seq\":1,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\",\"session\":\"a\",\"type\":\"x\",\"data\":{{\"v\":{}{}}}}}",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(parse_line(ok.as_bytes()).is_ok());
    }

    #[test]
    fn masks_secrets() {
        assert_eq!(
            mask_secrets("key sk-abcdefghijklmnop end"),
            "key sk-*** end"
        );
        assert_eq!(
            mask_secrets("Authorization: Bearer abcdefghijklmnopq"),
            "Authorization: Bearer ***"
        );
        assert_eq!(mask_secrets("sk-short"), "sk-short");
    }

    /// Found by the fuzz target: a secret the excerpt's cut split was shown in part.
    #[test]
    fn excerpt_masks_a_secret_the_cut_splits() {
        for at in 180..EXCERPT_BYTES + 2 {
            let line = format!("{}Bearer abcdefghijklmnopqrstuvwxyz\"}}", "x".repeat(at));
            let ex = excerpt(line.as_bytes());
            assert!(!ex.contains("abc"), "{at}: {ex:?}");
            assert!(ex.len() <= EXCERPT_BYTES + 10, "{at}: {ex:?}");
        }
        let short = format!("{}Bearer abc\"}}", "x".repeat(190));
        assert_eq!(excerpt(short.as_bytes()), short[..EXCERPT_BYTES]);
    }

    /// Found by the fuzz target: the reason quoted the `seq` or `ts` value whole, secrets
    /// and all.
    #[test]
    fn reasons_quote_values_short_and_masked() {
        let line = br#"{"seq":{"authorization":"Bearer abcdefghijklmnopqrstuvwxyz"},"ts":"x"}"#;
        let err = parse_line(line).unwrap_err();
        assert!(err.contains("Bearer ***") && !err.contains("abc"), "{err}");
        let long = format!(
            r#"{{"seq":1,"ts":"{}","root":"a","session":"a","type":"x"}}"#,
            "9".repeat(10_000)
        );
        let err = parse_line(long.as_bytes()).unwrap_err();
        assert!(err.contains("RFC 3339") && err.len() < 200, "{err}");
        // Found by the fuzz target: JSON whitespace inside a raw `seq` value was quoted as is.
        let err = parse_line(b"{\"seq\":{ \"a\"\r\r\t:1},\"ts\":\"x\"}").unwrap_err();
        assert!(!err.chars().any(char::is_control), "{err:?}");
        // Found by the fuzz target: a control character between `Bearer` and a token
        // became the space that makes a secret of them after the masking.
        let line = b"{\"seq\":{\"authorization\":\"Bearer\x7fabcdefklmnopqrstuvwxyz\"}}";
        let err = parse_line(line).unwrap_err();
        assert_eq!(mask_secrets(&err), err);
        assert!(!err.contains("abcdef"), "{err}");
    }

    /// Data whose syntax is valid but that serde_json cannot read into values is rejected,
    /// not kept with a payload every later stage would see as `{}`.
    #[test]
    fn unreadable_data_is_rejected() {
        let line = |data: &str| {
            format!(
                r#"{{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"a","session":"a","type":"model/end","data":{data}}}"#
            )
        };
        let long = format!(r#"{{"x":{}}}"#, "9".repeat(400));
        for bad in [
            r#"{"finish_reason":"stop","x":1e400}"#,
            r#"{"x":"\ud800"}"#,
            r#"{"x":[{"\udc00y":1}]}"#,
            &long,
        ] {
            let err = parse_line(line(bad).as_bytes()).unwrap_err();
            assert!(
                err.starts_with("`data` cannot be read as JSON: "),
                "{bad}: {err}"
            );
            assert!(!err.contains("column"), "{err}");
        }
        let long = format!(r#"{{"x":{},"id":"3e4f"}}"#, "9".repeat(300));
        for good in [
            r#"{"x":1e300,"y":-2.5E-400,"z":"\ud83d\ude00 \u00e9 e5"}"#,
            &long,
        ] {
            let ev = parse_line(line(good).as_bytes()).unwrap();
            assert_eq!(ev.data, good);
        }
    }
}
