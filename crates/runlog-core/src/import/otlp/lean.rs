//! A lean reading of OTLP JSON traces: `TracesData` decoded straight into [`Span`]s, the
//! attributes into their JSON text ([`super::attributes`]: a string value copied from the
//! line as it is spelled there), without the message types of `opentelemetry-proto` between
//! (whose `AnyValue` buffers every value before reading it). It reads what those types
//! read, the same way (the OTLP/JSON encoding as `opentelemetry-proto` 0.33 decodes it);
//! what it does not take on (bytes values, ids that are not plain hex) is an error, and the
//! line is then read with the message types. One difference: an array or key-value list
//! whose empty `values` is left out, as protobuf's JSON writes it, is empty here (the
//! message types reject the whole line).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{attributes, micros, scope_text, Decoded, Span, SpanEvent};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TracesData {
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ResourceSpans {
    resource: Option<Resource>,
    scope_spans: Vec<ScopeSpans>,
    #[serde(rename = "schemaUrl")]
    _schema_url: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Resource {
    attributes: Attrs,
    #[serde(rename = "droppedAttributesCount")]
    _dropped: u32,
    #[serde(rename = "entityRefs")]
    _entity_refs: IgnoredSeq,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ScopeSpans {
    scope: Option<Scope>,
    spans: Vec<LeanSpan>,
    #[serde(rename = "schemaUrl")]
    _schema_url: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Scope {
    name: String,
    version: String,
    attributes: Attrs,
    #[serde(rename = "droppedAttributesCount")]
    _dropped: u32,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct LeanSpan {
    trace_id: HexId,
    span_id: HexId,
    #[serde(rename = "traceState")]
    _trace_state: String,
    parent_span_id: HexId,
    #[serde(rename = "flags")]
    _flags: u32,
    name: String,
    kind: i32,
    start_time_unix_nano: Nanos,
    end_time_unix_nano: Nanos,
    attributes: Attrs,
    #[serde(rename = "droppedAttributesCount")]
    _dropped_attributes: u32,
    events: Vec<LeanEvent>,
    #[serde(rename = "droppedEventsCount")]
    _dropped_events: u32,
    links: Vec<LeanLink>,
    #[serde(rename = "droppedLinksCount")]
    _dropped_links: u32,
    status: Option<Status>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct LeanEvent {
    time_unix_nano: Nanos,
    name: String,
    attributes: Attrs,
    #[serde(rename = "droppedAttributesCount")]
    _dropped: u32,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct LeanLink {
    trace_id: HexId,
    span_id: HexId,
    #[serde(rename = "traceState")]
    _trace_state: String,
    attributes: Attrs,
    #[serde(rename = "droppedAttributesCount")]
    _dropped: u32,
    #[serde(rename = "flags")]
    _flags: u32,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Status {
    message: String,
    code: i32,
}

/// A sequence the mapping does not use, taken on only when empty (`entityRefs`: the message
/// types check the members of each).
#[derive(Default)]
struct IgnoredSeq;

impl<'de> Deserialize<'de> for IgnoredSeq {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Vec::<IgnoredAny>::deserialize(d)?.len() {
            0 => Ok(IgnoredSeq),
            _ => Err(de::Error::custom(
                "entity refs are read by the message types",
            )),
        }
    }
}

/// A trace or span id: hex digits, given in lower case.
#[derive(Default)]
struct HexId(String);

impl<'de> Deserialize<'de> for HexId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = CowStr::deserialize(d)?.0;
        if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(de::Error::custom("id is not plain hex"));
        }
        Ok(HexId(s.to_ascii_lowercase()))
    }
}

/// Nanoseconds since the epoch: a number, or a string of one.
#[derive(Default)]
struct Nanos(u64);

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = u64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a u64 or a string of one")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
                Ok(v)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
                u64::try_from(v).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V).map(Nanos)
    }
}

/// `KeyValue`s as [`attributes::Attrs`]: each value's JSON text as serde_json writes
/// [`super::any_to_json`]'s value (a string as the line spells it when that is the same);
/// a later key replaces an earlier one.
#[derive(Default)]
struct Attrs(attributes::Attrs);

impl<'de> Deserialize<'de> for Attrs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = attributes::Attrs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of KeyValue")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut members: Vec<(Cow<'de, str>, Cow<'de, str>)> = Vec::new();
                while let Some(kv) = seq.next_element::<KeyValueText<'de>>()? {
                    members.push((kv.0, kv.1));
                }
                // In key order, the last of equal keys kept (as a map's inserts leave it): a
                // stable sort keeps equal keys in their order, and of each run of them the
                // last is moved to the run's first place.
                members.sort_by(|a, b| a.0.cmp(&b.0));
                members.dedup_by(|later, kept| {
                    let same = later.0 == kept.0;
                    if same {
                        std::mem::swap(later, kept);
                    }
                    same
                });
                attributes::Attrs::build(&members)
                    .ok_or_else(|| de::Error::custom("attributes over 4 GiB"))
            }
        }
        d.deserialize_seq(V).map(Attrs)
    }
}

/// `KeyValue`s as a JSON map (the members of a key-value list value).
#[derive(Default)]
struct JsonAttrs(Map<String, Value>);

impl<'de> Deserialize<'de> for JsonAttrs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Map<String, Value>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence of KeyValue")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut m = Map::new();
                while let Some(KeyValue(k, v)) = seq.next_element()? {
                    m.insert(k, v);
                }
                Ok(m)
            }
        }
        d.deserialize_seq(V).map(JsonAttrs)
    }
}

/// One `KeyValue` with its value as JSON text ([`AnyText`]).
struct KeyValueText<'de>(Cow<'de, str>, Cow<'de, str>);

impl<'de> Deserialize<'de> for KeyValueText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyValueText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a KeyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut key: Option<Cow<'de, str>> = None;
                let mut value: Option<Cow<'de, str>> = None;
                while let Some(k) = map.next_key::<CowStr<'de>>()? {
                    match &*k.0 {
                        "key" => {
                            if key.is_some() {
                                return Err(de::Error::duplicate_field("key"));
                            }
                            key = Some(map.next_value::<CowStr<'de>>()?.0);
                        }
                        "value" => {
                            if value.is_some() {
                                return Err(de::Error::duplicate_field("value"));
                            }
                            value = Some(
                                map.next_value::<Option<AnyText<'de>>>()?
                                    .map_or(Cow::Borrowed("null"), |a| a.0),
                            );
                        }
                        "keyStrindex" => {
                            map.next_value::<i32>()?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let key = key.ok_or_else(|| de::Error::missing_field("key"))?;
                Ok(KeyValueText(key, value.unwrap_or(Cow::Borrowed("null"))))
            }
        }
        d.deserialize_map(V)
    }
}

/// A string, borrowed from the line when it holds no escape.
struct CowStr<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v))
            }
        }
        d.deserialize_str(V).map(CowStr)
    }
}

/// An `AnyValue` as the JSON text serde_json writes of [`AnyValue`]'s value: a string as
/// the line spells it when serde_json spells it so ([`attributes::is_canonical_str`]),
/// else written again; the other values written from their JSON value.
struct AnyText<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for AnyText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object for AnyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyText<'de>, A::Error> {
                let mut value: Cow<'de, str> = Cow::Borrowed("null");
                while let Some(k) = map.next_key::<CowStr<'de>>()? {
                    let next: Option<Cow<'de, str>> = match &*k.0 {
                        "stringValue" => match map.next_value::<Option<&'de RawValue>>()? {
                            None => None,
                            Some(raw) => Some(string_text(raw.get()).map_err(de::Error::custom)?),
                        },
                        "boolValue" => map
                            .next_value::<Option<bool>>()?
                            .map(|b| Cow::Borrowed(if b { "true" } else { "false" })),
                        other => value_member(other, &mut map)?.map(|v| Cow::Owned(v.to_string())),
                    };
                    if let Some(v) = next {
                        value = v;
                    }
                }
                Ok(AnyText(value))
            }
        }
        d.deserialize_map(V)
    }
}

/// A `stringValue`'s JSON text as serde_json writes the string; an error when the raw
/// value is not a string.
fn string_text(raw: &str) -> Result<Cow<'_, str>, String> {
    if !raw.starts_with('"') {
        return Err(format!("stringValue is not a string: {raw:.40}"));
    }
    if attributes::is_canonical_str(raw) {
        return Ok(Cow::Borrowed(raw));
    }
    let s: String = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    Ok(Cow::Owned(Value::String(s).to_string()))
}

/// One `KeyValue`: `key` (required), `value` (an `AnyValue`; absent or null is null),
/// `keyStrindex` (an int32, unused).
struct KeyValue(String, Value);

impl<'de> Deserialize<'de> for KeyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a KeyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyValue, A::Error> {
                let mut key: Option<String> = None;
                let mut value: Option<Value> = None;
                while let Some(k) = map.next_key::<CowStr<'de>>()? {
                    match &*k.0 {
                        "key" => {
                            if key.is_some() {
                                return Err(de::Error::duplicate_field("key"));
                            }
                            key = Some(map.next_value()?);
                        }
                        "value" => {
                            if value.is_some() {
                                return Err(de::Error::duplicate_field("value"));
                            }
                            value = Some(
                                map.next_value::<Option<AnyValue>>()?
                                    .map_or(Value::Null, |a| a.0),
                            );
                        }
                        "keyStrindex" => {
                            map.next_value::<i32>()?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let key = key.ok_or_else(|| de::Error::missing_field("key"))?;
                Ok(KeyValue(key, value.unwrap_or(Value::Null)))
            }
        }
        d.deserialize_map(V)
    }
}

/// An `AnyValue` as JSON: strings, booleans, integers (a number or a string of an int64)
/// and doubles as themselves (a double JSON cannot spell as null), arrays and key-value
/// lists as arrays and objects; an object with none of these is null. A member set to null
/// leaves the value as it was; of several members, the last wins.
struct AnyValue(Value);

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object for AnyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyValue, A::Error> {
                let mut value = Value::Null;
                while let Some(k) = map.next_key::<CowStr<'de>>()? {
                    let next = match &*k.0 {
                        "stringValue" => map.next_value::<Option<String>>()?.map(Value::String),
                        other => value_member(other, &mut map)?,
                    };
                    if let Some(v) = next {
                        value = v;
                    }
                }
                Ok(AnyValue(value))
            }
        }
        d.deserialize_map(V)
    }
}

/// The value of an `AnyValue`'s member `key` other than `stringValue` (read by each caller
/// its own way): booleans, integers (a number or a string of an int64) and doubles as
/// themselves (a double JSON cannot spell as null), arrays and key-value lists as arrays and
/// objects; `None` for a member set to null or not a value.
fn value_member<'de, A: MapAccess<'de>>(key: &str, map: &mut A) -> Result<Option<Value>, A::Error> {
    Ok(match key {
        "boolValue" => map.next_value::<Option<bool>>()?.map(Value::Bool),
        "intValue" => map.next_value::<Option<Int>>()?.map(|i| Value::from(i.0)),
        "doubleValue" => map
            .next_value::<Option<f64>>()?
            .map(|d| serde_json::Number::from_f64(d).map_or(Value::Null, Value::Number)),
        "arrayValue" => map
            .next_value::<Option<ArrayValue>>()?
            .map(|a| Value::Array(a.0)),
        "kvlistValue" => map
            .next_value::<Option<KvList>>()?
            .map(|kv| Value::Object(kv.0)),
        "bytesValue" => {
            return Err(de::Error::custom(
                "bytes values are read by the message types",
            ))
        }
        _ => {
            map.next_value::<IgnoredAny>()?;
            None
        }
    })
}

/// An int64 as a JSON number or a string of one.
struct Int(i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = i64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an int64 or a string of one")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
                Ok(v)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
                i64::try_from(v).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V).map(Int)
    }
}

/// `ArrayValue`: `values`, absent when empty (protobuf's JSON leaves out an empty repeated
/// field: OpenLIT's `gen_ai.request.stop_sequences` is `{"arrayValue":{}}`).
struct ArrayValue(Vec<Value>);

impl<'de> Deserialize<'de> for ArrayValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            values: Vec<AnyValue>,
        }
        let raw = Raw::deserialize(d)?;
        Ok(ArrayValue(raw.values.into_iter().map(|a| a.0).collect()))
    }
}

/// `KeyValueList`: `values`, absent when empty.
struct KvList(Map<String, Value>);

impl<'de> Deserialize<'de> for KvList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            values: JsonAttrs,
        }
        Raw::deserialize(d).map(|r| KvList(r.values.0))
    }
}

/// The spans of one line of OTLP JSON traces, or an error when the line is not one the lean
/// reading takes on.
pub(super) fn read_traces(out: &mut Decoded, line: u64, text: &[u8]) -> serde_json::Result<()> {
    // Checked as UTF-8 once, whole, rather than string by string.
    let text = std::str::from_utf8(text).map_err(de::Error::custom)?;
    let data: TracesData = serde_json::from_str(text)?;
    for rs in data.resource_spans {
        let resource = Arc::new(rs.resource.map(|r| r.attributes.0).unwrap_or_default());
        for ss in rs.scope_spans {
            let scope: Arc<str> = match ss.scope {
                None => "null".into(),
                Some(s) => scope_text(&s.attributes.0, &s.name, &s.version).into(),
            };
            for s in ss.spans {
                let (status, status_message) =
                    s.status.map(|st| (st.code, st.message)).unwrap_or_default();
                out.spans.push(Span {
                    line,
                    trace: s.trace_id.0,
                    id: s.span_id.0,
                    parent: s.parent_span_id.0,
                    name: s.name,
                    kind: s.kind,
                    start: micros(s.start_time_unix_nano.0),
                    end: micros(s.end_time_unix_nano.0),
                    status,
                    status_message,
                    attrs: s.attributes.0,
                    events: s
                        .events
                        .into_iter()
                        .map(|e| SpanEvent {
                            ts: micros(e.time_unix_nano.0),
                            name: e.name,
                            attrs: e.attributes.0,
                        })
                        .collect(),
                    links: s
                        .links
                        .into_iter()
                        .map(|l| {
                            let mut link = Map::new();
                            link.insert(
                                "attributes".into(),
                                Value::Object(l.attributes.0.to_map()),
                            );
                            link.insert("span_id".into(), l.span_id.0.into());
                            link.insert("trace_id".into(), l.trace_id.0.into());
                            Value::Object(link)
                        })
                        .collect(),
                    scope: scope.clone(),
                    resource: resource.clone(),
                });
            }
        }
    }
    Ok(())
}
