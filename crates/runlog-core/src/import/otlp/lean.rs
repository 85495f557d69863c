//! A lean reading of OTLP JSON traces: `TracesData` decoded straight into [`Span`]s, the
//! attributes into JSON maps, without the message types of `opentelemetry-proto` between
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
use serde_json::{json, Map, Value};

use super::{micros, Decoded, Span, SpanEvent};

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
        let s = Cow::<str>::deserialize(d)?;
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

/// `KeyValue`s as a JSON map: each value as [`super::any_to_json`] gives it; a later key
/// replaces an earlier one.
#[derive(Default)]
struct Attrs(Map<String, Value>);

impl<'de> Deserialize<'de> for Attrs {
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
        d.deserialize_seq(V).map(Attrs)
    }
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
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    match &*k {
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
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    let next = match &*k {
                        "stringValue" => map.next_value::<Option<String>>()?.map(Value::String),
                        "boolValue" => map.next_value::<Option<bool>>()?.map(Value::Bool),
                        "intValue" => map.next_value::<Option<Int>>()?.map(|i| Value::from(i.0)),
                        "doubleValue" => map.next_value::<Option<f64>>()?.map(|d| {
                            serde_json::Number::from_f64(d).map_or(Value::Null, Value::Number)
                        }),
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
            values: Attrs,
        }
        Raw::deserialize(d).map(|r| KvList(r.values.0))
    }
}

/// The spans of one line of OTLP JSON traces, or an error when the line is not one the lean
/// reading takes on.
pub(super) fn read_traces(out: &mut Decoded, line: u64, text: &[u8]) -> serde_json::Result<()> {
    let data: TracesData = serde_json::from_slice(text)?;
    for rs in data.resource_spans {
        let resource = Arc::new(rs.resource.map(|r| r.attributes.0).unwrap_or_default());
        for ss in rs.scope_spans {
            let scope = Arc::new(match ss.scope {
                None => Value::Null,
                Some(s) => json!({
                    "name": s.name,
                    "version": s.version,
                    "attributes": s.attributes.0,
                }),
            });
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
                            json!({
                                "trace_id": l.trace_id.0,
                                "span_id": l.span_id.0,
                                "attributes": l.attributes.0,
                            })
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
