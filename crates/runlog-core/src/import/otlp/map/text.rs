//! JSON object text written member by member from borrowed values: the data of the events
//! that carry a span's attributes (`model/end`, `tool/call`, span events, …), written
//! without copying the attributes into a JSON tree first. Members are given in key order,
//! the order of a JSON map, as every event's data is.

use serde::Serialize;

/// A JSON object's text being written; [`ObjectText::finish`] gives it.
pub(in crate::import::otlp) struct ObjectText {
    buf: Vec<u8>,
    #[cfg(debug_assertions)]
    last: &'static str,
}

impl ObjectText {
    pub(in crate::import::otlp) fn new() -> ObjectText {
        ObjectText::with_capacity(256)
    }

    /// An object whose text will be about `bytes` long.
    pub(in crate::import::otlp) fn with_capacity(bytes: usize) -> ObjectText {
        ObjectText {
            buf: Vec::with_capacity(bytes),
            #[cfg(debug_assertions)]
            last: "",
        }
    }

    /// Adds member `key` (given after every key before it in byte order) with `value`.
    pub(in crate::import::otlp) fn member<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> &mut ObjectText {
        #[cfg(debug_assertions)]
        {
            debug_assert!(self.buf.is_empty() || self.last < key, "{key} out of order");
            self.last = key;
        }
        let before = self.buf.len();
        self.buf.push(if before == 0 { b'{' } else { b',' });
        self.buf.push(b'"');
        // The keys are plain names: nothing to escape.
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
        if serde_json::to_writer(&mut self.buf, value).is_err() {
            // Not for the values written here (JSON maps have string keys); a member that
            // cannot be written is left out whole.
            self.buf.truncate(before);
        }
        self
    }

    /// Adds member `key` (in order, as [`ObjectText::member`]) whose value is the JSON
    /// text `raw`, as serde_json writes it.
    pub(in crate::import::otlp) fn member_raw(
        &mut self,
        key: &'static str,
        raw: &str,
    ) -> &mut ObjectText {
        #[cfg(debug_assertions)]
        {
            debug_assert!(self.buf.is_empty() || self.last < key, "{key} out of order");
            self.last = key;
        }
        self.buf.push(if self.buf.is_empty() { b'{' } else { b',' });
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
        self.buf.extend_from_slice(raw.as_bytes());
        self
    }

    /// The object's text (`{}` without members).
    pub(in crate::import::otlp) fn finish(mut self) -> String {
        if self.buf.is_empty() {
            return "{}".to_string();
        }
        self.buf.push(b'}');
        String::from_utf8(self.buf).unwrap_or_else(|_| "{}".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::ObjectText;
    use serde_json::{json, Map, Value};

    #[test]
    fn writes_what_a_json_map_writes() {
        let attrs: Map<String, Value> =
            serde_json::from_str(r#"{"b":"x\"y\n","a":[1,2.5,null],"c":{"d":true}}"#).unwrap();
        let mut o = ObjectText::new();
        o.member("attributes", &attrs)
            .member("duration_ms", &12.5f64)
            .member("name", "chat \u{1}é");
        let want = json!({"attributes": attrs, "duration_ms": 12.5, "name": "chat \u{1}é"});
        assert_eq!(o.finish(), want.to_string());
        assert_eq!(ObjectText::new().finish(), "{}");
    }
}
