//! JSON object text written member by member from borrowed values: the data of the events
//! that carry a span's attributes (`model/end`, `tool/call`, span events, …), written
//! without copying the attributes into a JSON tree first, straight into the event's
//! [`Data`], with where its members are for the event's index. Members are given in key order,
//! the order of a JSON map, as every event's data is.

use serde::Serialize;

use crate::event::payload::Members;
use crate::event::{Data, DataBuf};

/// A JSON object's text being written, straight into the block its event's [`Data`] will
/// be; [`ObjectText::finish`] gives it.
pub(in crate::import::otlp) struct ObjectText {
    buf: DataBuf,
    /// Where each member's key and value are (so that indexing the payload does not walk
    /// it again).
    members: Members,
    /// A member's value as serde_json writes it, before it is checked as text.
    value: Vec<u8>,
    #[cfg(debug_assertions)]
    last: &'static str,
}

/// An object written by [`ObjectText`]: its text, and where its members are in it.
pub(in crate::import::otlp) struct Written {
    pub(in crate::import::otlp) data: Data,
    pub(in crate::import::otlp) members: Members,
}

impl ObjectText {
    pub(in crate::import::otlp) fn new() -> ObjectText {
        ObjectText::with_capacity(256)
    }

    /// An object whose text will be about `bytes` long.
    pub(in crate::import::otlp) fn with_capacity(bytes: usize) -> ObjectText {
        ObjectText {
            buf: DataBuf::with_capacity(bytes),
            members: Members::EMPTY,
            value: Vec::new(),
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
        let mut text = std::mem::take(&mut self.value);
        text.clear();
        // Not for the values written here (JSON maps have string keys), but a member that
        // cannot be written is left out whole.
        if serde_json::to_writer(&mut text, value).is_ok() {
            if let Ok(t) = std::str::from_utf8(&text) {
                self.member_raw(key, t);
            }
        }
        self.value = text;
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
        self.buf
            .push_str(if self.buf.is_empty() { "{\"" } else { ",\"" });
        // The keys are plain names: nothing to escape.
        let key_at = self.buf.len();
        self.buf.push_str(key);
        self.buf.push_str("\":");
        let value_at = self.buf.len();
        self.buf.push_str(raw);
        self.members
            .push((key_at, key_at + key.len()), (value_at, self.buf.len()));
        self
    }

    /// The object's text (`{}` without members).
    pub(in crate::import::otlp) fn finish(mut self) -> Written {
        if self.buf.is_empty() {
            self.buf.push_str("{");
        }
        self.buf.push_str("}");
        Written {
            data: self.buf.finish(),
            members: self.members,
        }
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
        assert_eq!(o.finish().data, want.to_string());
        assert_eq!(ObjectText::new().finish().data, "{}");
    }
}
