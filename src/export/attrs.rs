//! Building a span's attributes: OTLP key–values from Rust values, leaving out what is NULL
//! (an attribute the tables do not hold is absent, never an empty string).

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, KeyValue};

/// A span's attributes, in the order they were added.
#[derive(Debug, Default)]
pub struct Attrs(pub Vec<KeyValue>);

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        key_strindex: 0,
    }
}

impl Attrs {
    /// A text attribute.
    pub fn str(&mut self, key: &str, v: &str) -> &mut Self {
        self.0
            .push(kv(key, any_value::Value::StringValue(v.to_string())));
        self
    }

    /// A text attribute when there is a value.
    pub fn opt_str(&mut self, key: &str, v: Option<&str>) -> &mut Self {
        if let Some(v) = v {
            self.str(key, v);
        }
        self
    }

    /// An integer attribute.
    pub fn int(&mut self, key: &str, v: i64) -> &mut Self {
        self.0.push(kv(key, any_value::Value::IntValue(v)));
        self
    }

    /// An integer attribute when there is a value.
    pub fn opt_int(&mut self, key: &str, v: Option<i64>) -> &mut Self {
        if let Some(v) = v {
            self.int(key, v);
        }
        self
    }

    /// A boolean attribute.
    pub fn bool(&mut self, key: &str, v: bool) -> &mut Self {
        self.0.push(kv(key, any_value::Value::BoolValue(v)));
        self
    }

    /// A boolean attribute when there is a value.
    pub fn opt_bool(&mut self, key: &str, v: Option<bool>) -> &mut Self {
        if let Some(v) = v {
            self.bool(key, v);
        }
        self
    }

    /// An array of texts.
    pub fn strs(&mut self, key: &str, vs: &[&str]) -> &mut Self {
        let values = vs
            .iter()
            .map(|s| AnyValue {
                value: Some(any_value::Value::StringValue(s.to_string())),
            })
            .collect();
        self.0
            .push(kv(key, any_value::Value::ArrayValue(ArrayValue { values })));
        self
    }
}
