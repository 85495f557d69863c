//! Reads the few payload fields the reducer needs straight from an event's `data` text,
//! borrowing and without allocating.
//!
//! The reducer looks at one to four fields of most events (`text` of a delta, `usage` and
//! `error` of a model call, ...). Parsing each payload into a `serde_json::Value` map cost
//! more than everything else the reducer does, so [`fields`] walks the top level of the
//! object once and hands back the raw text of the wanted members, and [`Raw`] reads a member
//! as a string, integer, bool or nested object.
//!
//! The answers are those of reading the payload as a `serde_json` map: the last of duplicate
//! keys wins, and a member of the wrong type reads as absent. Text the walker does not handle
//! itself (an escaped key, anything malformed) is handed to serde_json, as are escaped strings
//! and numbers that are not plain integers, so the walker changes speed, never answers.
//!
//! Each event also carries a [`PayloadIndex`]: where the members its kind needs are, found once
//! when the event is decoded (from the members the decoder met while checking the line), so
//! that reducing it does not walk the text again. Reads through the index give the answers
//! of [`fields`].

mod index;
mod scan;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

pub use index::{keys, wanted, Members, PayloadIndex, INDEX_BYTES};
use scan::{has_backslash, scan_chars, sole_string_member, walk};

/// The raw JSON text of one member's value (no surrounding whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a>(pub &'a str);

impl<'a> Raw<'a> {
    /// The value's text exactly as written.
    pub fn text(self) -> &'a str {
        self.0
    }

    /// The value as a string, if it is one.
    #[inline]
    pub fn as_str(self) -> Option<Cow<'a, str>> {
        let t = self.0;
        if !t.starts_with('"') || t.len() < 2 {
            return None;
        }
        let inner = &t[1..t.len() - 1];
        if !has_backslash(inner.as_bytes()) {
            return Some(Cow::Borrowed(inner));
        }
        serde_json::from_str::<String>(t).ok().map(Cow::Owned)
    }

    /// The length in characters of the value, if it is a string, without unescaping it
    /// (a text delta's length is all the tables keep of it).
    pub fn char_len(self) -> Option<i64> {
        let b = self.0.as_bytes();
        if b.first() != Some(&b'"') {
            return None;
        }
        match scan_chars(b, 1) {
            Some((end, n)) if end + 1 == b.len() => Some(n),
            // `\uXXXX` may pair with another into one character: serde_json decides.
            _ => self.as_str().map(|s| s.chars().count() as i64),
        }
    }

    /// The value as an owned string, if it is one.
    pub fn string(self) -> Option<String> {
        self.as_str().map(Cow::into_owned)
    }

    /// The value as an integer: an integer within `i64`, or a float with no fraction
    /// below 9·10^15 (as JSON writers that only know doubles write counts).
    pub fn as_i64(self) -> Option<i64> {
        let b = self.0.as_bytes();
        let digits = b.strip_prefix(b"-").unwrap_or(b);
        if !digits.is_empty() && digits.len() <= 18 {
            // A plain integer that fits (18 digits): read it here, in one pass.
            let mut v = 0i64;
            let mut plain = true;
            for &d in digits {
                plain &= d.is_ascii_digit();
                v = v
                    .wrapping_mul(10)
                    .wrapping_add(i64::from(d.wrapping_sub(b'0')));
            }
            if plain {
                return Some(if digits.len() < b.len() { -v } else { v });
            }
        }
        if !matches!(b.first(), Some(b'-' | b'0'..=b'9')) {
            return None;
        }
        let v: Value = serde_json::from_str(self.0).ok()?;
        v.as_i64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        })
    }

    /// The value as a bool, if it is one.
    pub fn as_bool(self) -> Option<bool> {
        match self.0 {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// Whether the value is an object.
    pub fn is_object(self) -> bool {
        self.0.starts_with('{')
    }

    /// Whether the value is `null`.
    pub fn is_null(self) -> bool {
        self.0 == "null"
    }

    /// Members of the value, if it is an object (see [`fields`]).
    pub fn fields<const N: usize>(self, keys: [&str; N]) -> [Option<Raw<'a>>; N] {
        if self.is_object() {
            fields(self.0, keys)
        } else {
            [None; N]
        }
    }

    /// One member of the value, if it is an object.
    pub fn get(self, key: &str) -> Option<Raw<'a>> {
        let [v] = self.fields([key]);
        v
    }

    /// The value parsed (for the rare consumer that keeps a whole subtree).
    pub fn to_value(self) -> Value {
        serde_json::from_str(self.0).unwrap_or(Value::Null)
    }
}

/// The raw values of `keys` among the top-level members of the JSON object `data` (`None`
/// for a key that is absent, or for all keys when `data` is not an object).
pub fn fields<'a, const N: usize>(data: &'a str, keys: [&str; N]) -> [Option<Raw<'a>>; N] {
    let mut out = [None; N];
    fields_into(data, &keys, &mut out);
    out
}

/// [`fields`] into `out` (as long as `keys`).
pub(super) fn fields_into<'a>(data: &'a str, keys: &[&str], out: &mut [Option<Raw<'a>>]) {
    if walk(data, keys, out).is_none() {
        out.fill(None);
        // serde_json decides: escaped keys, or text this walker does not expect.
        if let Ok(map) = serde_json::from_str::<BTreeMap<Cow<'a, str>, &'a RawValue>>(data) {
            for (slot, key) in out.iter_mut().zip(keys) {
                *slot = map.get(*key).map(|v| Raw(v.get()));
            }
        }
    }
}

/// The length in characters of the string member `key` of `data` (see [`Raw::char_len`]).
/// Reads the shape nearly every text delta has, `{"key":"..."}`, in one pass.
#[inline(never)] // off the reducer's path: events read through an index do not call it
pub fn member_chars(data: &str, key: &str) -> Option<i64> {
    match sole_string_member(data.as_bytes(), key) {
        Some((_, n)) => Some(n),
        None => get(data, key).and_then(Raw::char_len),
    }
}

/// One top-level member of the JSON object `data`.
pub fn get<'a>(data: &'a str, key: &str) -> Option<Raw<'a>> {
    let [v] = fields(data, [key]);
    v
}
