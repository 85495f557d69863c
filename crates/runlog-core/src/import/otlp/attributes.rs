//! A span's (or event's, or record's) attributes as the JSON object text the events that
//! carry them write: members in key order, each value as serde_json writes it, built once
//! when the line is read (from the line's own text where it is already so written). Events
//! copy the text as it is, without a JSON tree or writing it again; the mapping looks a
//! member up by its key and reads only the values it needs. Most keys looked up are absent
//! (each canonical field has several spellings, one of them written at most): a filter of
//! the keys present answers those without a search.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// The attributes' JSON object text and where each member is in it.
#[derive(Debug, Clone)]
pub(crate) struct Attrs {
    /// `{"key":value,...}`, keys in byte order, each once; `{}` when empty.
    text: String,
    /// Each member's key as written, without quotes, and value (ranges of `text`), ordered by the
    /// key as written (so that a key looked up, which holds nothing to escape, is found by
    /// its bytes).
    index: Vec<[u32; 4]>,
    /// The [`key_bit`] of every key: a key whose bit is not set is absent.
    keys: u64,
}

impl Default for Attrs {
    fn default() -> Attrs {
        Attrs {
            text: "{}".to_string(),
            index: Vec::new(),
            keys: 0,
        }
    }
}

/// One of 64 bits for a key's bytes (as written), by a hash with a fixed seed.
fn key_bit(key: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    let hash = foldhash::fast::FixedState::with_seed(0x9e37_79b9_7f4a_7c15).hash_one(key);
    1 << (hash >> 58)
}

impl Attrs {
    /// The attributes of `members`: (key, value as JSON text that serde_json writes), in
    /// key order, each key once. `None` when the text passes 4 GiB.
    pub(crate) fn build<K, V>(members: &[(K, V)]) -> Option<Attrs>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let size: usize = members
            .iter()
            .map(|(k, v)| k.as_ref().len() + v.as_ref().len() + 4)
            .sum();
        let mut text = String::with_capacity(size + 2);
        let mut index = Vec::with_capacity(members.len());
        let at = |n: usize| u32::try_from(n).ok();
        text.push('{');
        for (k, v) in members {
            if !index.is_empty() {
                text.push(',');
            }
            let key_start = text.len() + 1;
            write_str(&mut text, k.as_ref());
            let key_end = text.len() - 1;
            text.push(':');
            let val_start = text.len();
            text.push_str(v.as_ref());
            index.push([
                at(key_start)?,
                at(key_end)?,
                at(val_start)?,
                at(text.len())?,
            ]);
        }
        text.push('}');
        let bytes = text.as_bytes();
        index.sort_unstable_by(|a, b| {
            bytes[a[0] as usize..a[1] as usize].cmp(&bytes[b[0] as usize..b[1] as usize])
        });
        let keys = index.iter().fold(0, |bits, m| {
            bits | key_bit(&bytes[m[0] as usize..m[1] as usize])
        });
        Some(Attrs { text, index, keys })
    }

    /// The attributes of a JSON map (the message types' reading).
    pub(crate) fn from_map(map: &Map<String, Value>) -> Attrs {
        let members: Vec<(&str, String)> = map
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_string()))
            .collect();
        Attrs::build(&members).unwrap_or_default()
    }

    /// The whole object's text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The attributes as a JSON map.
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(&self.text).unwrap_or_default()
    }

    fn part(&self, from: u32, to: u32) -> &str {
        self.text.get(from as usize..to as usize).unwrap_or("")
    }

    fn key(&self, from: u32, to: u32) -> &[u8] {
        self.text
            .as_bytes()
            .get(from as usize..to as usize)
            .unwrap_or(b"")
    }

    /// The JSON text of the value of `key` (a key with nothing to escape).
    pub(crate) fn raw(&self, key: &str) -> Option<&str> {
        if self.keys & key_bit(key.as_bytes()) == 0 {
            return None;
        }
        let i = self
            .index
            .binary_search_by(|m| self.key(m[0], m[1]).cmp(key.as_bytes()))
            .ok()?;
        let m = self.index[i];
        Some(self.part(m[2], m[3]))
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.raw(key).is_some()
    }

    /// The value of `key` when it is a string.
    pub(crate) fn str(&self, key: &str) -> Option<Cow<'_, str>> {
        let raw = self.raw(key)?;
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        serde_json::from_str(self.raw(key)?).ok()
    }

    /// Each member's key as written (without quotes) and value's text.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.index
            .iter()
            .map(|m| (self.part(m[0], m[1]), self.part(m[2], m[3])))
    }
}

/// `s` as a JSON string, as serde_json writes it.
fn write_str(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::from(s).to_string());
    }
}

/// Whether a JSON string literal (quotes included) is written as serde_json writes its
/// value: escapes only `"`, `\` and control characters, in serde_json's spelling.
pub(crate) fn is_canonical_str(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'\\', &b[from..]) {
        let i = from + at;
        match b.get(i + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => from = i + 2,
            Some(b'u') => {
                // `\u00XX` for a control character without a short escape, lower-case hex.
                let Some(hex) = b.get(i + 2..i + 6) else {
                    return false;
                };
                let ok = hex[0] == b'0'
                    && hex[1] == b'0'
                    && matches!(hex[2], b'0' | b'1')
                    && matches!(hex[3], b'0'..=b'9' | b'a'..=b'f')
                    && !matches!((hex[2], hex[3]), (b'0', b'8' | b'9' | b'a' | b'c' | b'd'));
                if !ok {
                    return false;
                }
                from = i + 6;
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_lookups_match_a_json_map() {
        let map: Map<String, Value> = serde_json::from_str(
            r#"{"b":"x\"y\n","a":[1,2.5,null],"c":{"d":true},"e\"q":1,"n":"plain"}"#,
        )
        .unwrap();
        let a = Attrs::from_map(&map);
        assert_eq!(a.text(), Value::Object(map.clone()).to_string());
        assert_eq!(a.str("b").as_deref(), Some("x\"y\n"));
        assert_eq!(a.str("n").as_deref(), Some("plain"));
        assert_eq!(a.str("a"), None);
        assert_eq!(a.get("c"), Some(serde_json::json!({"d": true})));
        assert_eq!(a.raw("a"), Some("[1,2.5,null]"));
        assert!(!a.contains_key("z"));
        assert_eq!(a.to_map(), map);
        assert_eq!(Attrs::default().text(), "{}");
    }

    #[test]
    fn every_key_is_found_however_many() {
        for n in [1, 8, 40, 300] {
            let map: Map<String, Value> = (0..n)
                .map(|i| (format!("gen_ai.key.{i}"), Value::from(i)))
                .collect();
            let a = Attrs::from_map(&map);
            for i in 0..n {
                assert_eq!(a.get(&format!("gen_ai.key.{i}")), Some(Value::from(i)));
            }
            for i in n..n + 300 {
                assert_eq!(a.raw(&format!("gen_ai.key.{i}")), None);
            }
        }
        assert_eq!(Attrs::default().raw(""), None);
    }

    #[test]
    fn canonical_strings_are_those_serde_json_writes() {
        for s in [
            "plain",
            "q\"b\\",
            "nl\n\t\r\u{8}\u{c}",
            "c\u{1}\u{1f}",
            "é/<",
        ] {
            let written = Value::from(s).to_string();
            assert!(is_canonical_str(&written), "{written}");
        }
        for raw in [
            r#""\/""#,
            r#""\u00e9""#,
            r#""\u001F""#,
            r#""\u000a""#,
            r#""\ud83d""#,
        ] {
            assert!(!is_canonical_str(raw), "{raw}");
        }
    }
}
