//! OpenCode's session database (docs/importers/opencode.md): releases from 1.2.0 keep their
//! sessions in the SQLite file `~/.local/share/opencode/opencode.db` instead of the storage
//! folder's JSON files. Its tables `session`, `message` and `part` hold the same documents
//! (OpenCode's `session/session.sql.ts`): a message's and a part's `data` column is the
//! storage document without its ids, which are columns (`id`, `session_id`, `message_id`);
//! a session is columns only (`id`, `project_id`, `parent_id`, `slug`, `directory`, `title`,
//! `version`, `time_created`, …).
//!
//! This module reads the rows back into those documents, one JSON document a line, so that
//! ingest reads the database as it reads a stream of storage documents: the OpenCode
//! importer maps each line with [`super::opencode_storage`], the file's documents each
//! other's neighbours. The lines are the `session` rows, then the `message` rows, then the
//! `part` rows, each table in `rowid` order: line *n* is the *n*-th row of that order. A
//! row whose `data` is not JSON stays one line (its text, line breaks made spaces), which
//! the importer rejects with that line number. The other tables (projects, todos,
//! permissions) are not read.

use std::io::Read;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Number, Value};

/// The first 16 bytes of every SQLite 3 database file.
pub const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The tables read, in line order.
const TABLES: [&str; 3] = ["session", "message", "part"];

/// Whether the file at `path` starts as a SQLite database does.
pub fn has_magic(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == *MAGIC
}

/// Whether `path` is an OpenCode database: a SQLite file with OpenCode's session tables.
pub fn is_database(path: &Path) -> bool {
    has_magic(path) && open(path).is_ok_and(|c| has_tables(&c))
}

/// The rows of the OpenCode database at `path` as storage documents, one JSON document a
/// line; `Ok(None)` when the file is not an OpenCode database (no SQLite header, or not
/// OpenCode's tables). An `Err` is why the database could not be read.
pub fn read_lines(path: &Path) -> Result<Option<Vec<u8>>, String> {
    if !has_magic(path) {
        return Ok(None);
    }
    let conn = open(path).map_err(|e| format!("SQLite database cannot be opened: {e}"))?;
    if !has_tables(&conn) {
        return Ok(None);
    }
    let mut out = Vec::new();
    for table in TABLES {
        read_table(&conn, table, &mut out).map_err(|e| format!("table `{table}`: {e}"))?;
    }
    Ok(Some(out))
}

/// Opens the database read-only. OpenCode writes it in WAL mode: its latest rows may be in
/// `opencode.db-wal`, which a plain read-only open reads too; where that cannot be done (a
/// read-only folder without the `-shm` file) the main file alone is read (`immutable`).
fn open(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    match conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(())) {
        Ok(()) => Ok(conn),
        Err(_) => {
            let uri = format!("file:{}?immutable=1", uri_path(path));
            Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
        }
    }
}

/// A path as the path of a `file:` URI (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let mut s = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => s.push_str("%25"),
            '?' => s.push_str("%3f"),
            '#' => s.push_str("%23"),
            c => s.push(c),
        }
    }
    s
}

fn has_tables(conn: &Connection) -> bool {
    TABLES.iter().all(|t| {
        conn.query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t],
            |_| Ok(()),
        )
        .is_ok()
    })
}

/// Appends one line per row of `table`, in `rowid` order.
fn read_table(conn: &Connection, table: &str, out: &mut Vec<u8>) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid"))?;
    let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let mut cols = Map::new();
        for (i, name) in names.iter().enumerate() {
            cols.insert(name.clone(), column(row.get_ref(i)?));
        }
        let line = match table {
            "session" => Ok(session(cols)),
            _ => with_ids(cols),
        };
        match line {
            Ok(doc) => {
                // serde_json writes no raw line break: one document, one line.
                let text = serde_json::to_vec(&Value::Object(doc)).unwrap_or_default();
                out.extend_from_slice(&text);
            }
            Err(raw) => out.extend(raw.bytes().map(|b| match b {
                b'\n' | b'\r' => b' ',
                b => b,
            })),
        }
        out.push(b'\n');
    }
    Ok(())
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

/// A message or part row as its storage document: `data` with the ids of the row's
/// columns; the row's `data` text when it is not a JSON object.
fn with_ids(mut cols: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let data = match cols.remove("data") {
        Some(Value::String(s)) => s,
        _ => return Err("null".into()),
    };
    let mut doc = match serde_json::from_str::<Value>(&data) {
        Ok(Value::Object(doc)) => doc,
        _ if data.trim().is_empty() => return Err("\"\"".into()),
        _ => return Err(data),
    };
    for (col, key) in [
        ("id", "id"),
        ("session_id", "sessionID"),
        ("message_id", "messageID"),
    ] {
        if let Some(v) = cols.remove(col).filter(|v| !v.is_null()) {
            doc.insert(key.to_string(), v);
        }
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_storage_documents_one_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
               slug text NOT NULL, directory text NOT NULL, title text NOT NULL,
               version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL);
             CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
               time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
             CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
               session_id text NOT NULL, time_created integer NOT NULL,
               time_updated integer NOT NULL, data text NOT NULL);
             INSERT INTO session VALUES ('ses_1', 'p', NULL, 's', '/w', 't', '1.2.0', 5, 6);
             INSERT INTO message VALUES ('msg_1', 'ses_1', 7, 7,
               '{\"role\":\"user\",\"time\":{\"created\":7}}');
             INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', 8, 8, '{\"type\":\"text\"');",
        )
        .unwrap();
        drop(conn);
        let text = String::from_utf8(read_lines(&path).unwrap().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let ses: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(ses["id"], "ses_1");
        assert_eq!(ses["projectID"], "p");
        assert_eq!(ses["time"]["created"], 5);
        assert!(ses.get("parentID").is_none());
        let msg: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(msg["sessionID"], "ses_1");
        assert_eq!(msg["id"], "msg_1");
        // A broken `data` stays on its own line, as written.
        assert_eq!(lines[2], "{\"type\":\"text\"");
        assert!(is_database(&path));
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (a)")
            .unwrap();
        assert!(!is_database(&other));
        assert_eq!(read_lines(&other), Ok(None));
        assert_eq!(read_lines(&dir.path().join("missing.db")), Ok(None));
    }
}
