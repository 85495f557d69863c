//! One row of OpenCode's database as the storage document it was made from
//! (docs/importers/opencode.md): a `session` row is columns only, a `message` or `part` row
//! its `data` column (the document without its ids) with the ids of its columns put back.
//! A row that cannot be made a document is the reason why, for the reject that names it.

use rusqlite::types::ValueRef;
use serde_json::{Map, Number, Value};

/// A row that is no document: why, and its `data` text (the reject's excerpt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable {
    pub reason: String,
    pub excerpt: Vec<u8>,
}

/// The id columns each table's rows need, and the document key each becomes.
fn id_columns(table: &str) -> &'static [(&'static str, &'static str)] {
    match table {
        "session" => &[("id", "id")],
        "message" => &[("id", "id"), ("session_id", "sessionID")],
        _ => &[
            ("id", "id"),
            ("session_id", "sessionID"),
            ("message_id", "messageID"),
        ],
    }
}

/// The row of `table` whose columns are `names` and values `values`, as its document.
pub fn document(
    table: &str,
    names: &[String],
    values: &[ValueRef],
) -> Result<Map<String, Value>, Undecodable> {
    let get = |col: &str| names.iter().position(|n| n == col).map(|i| values[i]);
    let fail = |reason: String, excerpt: &[u8]| Undecodable {
        reason,
        excerpt: excerpt.to_vec(),
    };
    let raw_data = match get("data") {
        Some(ValueRef::Text(t) | ValueRef::Blob(t)) => t,
        _ => &[][..],
    };
    let mut ids = Map::new();
    for &(col, key) in id_columns(table) {
        match get(col).map(column) {
            None => return Err(fail(format!("no column `{col}`"), raw_data)),
            Some(Value::Null) => return Err(fail(format!("`{col}` is NULL"), raw_data)),
            Some(v) => ids.insert(key.to_string(), v),
        };
    }
    if table == "session" {
        let cols = names.iter().cloned().zip(values.iter().map(|v| column(*v)));
        return Ok(session(cols.collect()));
    }
    let mut doc = match get("data") {
        None => return Err(fail("no column `data`".into(), b"")),
        Some(ValueRef::Null) => return Err(fail("`data` is NULL".into(), b"")),
        Some(ValueRef::Integer(_) | ValueRef::Real(_)) => {
            return Err(fail("`data` is a number, not a JSON object".into(), b""))
        }
        Some(_) => match serde_json::from_slice::<Value>(raw_data) {
            Ok(Value::Object(doc)) => doc,
            Ok(_) => return Err(fail("`data` is not a JSON object".into(), raw_data)),
            Err(e) => return Err(fail(format!("`data` is not JSON: {e}"), raw_data)),
        },
    };
    doc.extend(ids);
    Ok(doc)
}

/// A column's value as JSON (a blob as text, when it is UTF-8, else `null`).
fn column(v: ValueRef) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) | ValueRef::Blob(t) => match std::str::from_utf8(t) {
            Ok(s) => Value::String(s.to_string()),
            Err(_) => Value::Null,
        },
    }
}

/// A session row as the storage folder's session document (OpenCode's `Session.Info`).
fn session(cols: Map<String, Value>) -> Map<String, Value> {
    let mut doc = Map::new();
    let mut time = Map::new();
    for (col, v) in cols {
        if v.is_null() {
            continue;
        }
        let key = match col.as_str() {
            "project_id" => "projectID",
            "parent_id" => "parentID",
            "workspace_id" => "workspaceID",
            "share_url" => {
                doc.insert("share".into(), serde_json::json!({ "url": v }));
                continue;
            }
            c => match c.strip_prefix("time_") {
                Some(t) => {
                    time.insert(t.to_string(), v);
                    continue;
                }
                None => c,
            },
        };
        doc.insert(key.to_string(), v);
    }
    doc.insert("time".into(), Value::Object(time));
    doc
}
