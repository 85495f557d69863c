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
//! `part` rows, each table in `rowid` order: line *n* is the *n*-th row of that order.
//! What cannot be read takes a line of its own, blank in the text, with the reason beside
//! it ([`Lines::rejects`]): a row that is no document ([`row`]) on its line, a table that
//! is missing or stops being readable (a file cut short) after its rows read, a file that
//! is no database at all on line 1. The other tables (projects, todos, permissions) are not
//! read.

mod row;

use std::io::Read;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};

/// The first 16 bytes of every SQLite 3 database file.
pub const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The tables read, in line order.
const TABLES: [&str; 3] = ["session", "message", "part"];

/// A database read as lines: the rows as JSON documents, one a line, and the lines that are
/// rejects (blank in `text`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lines {
    pub text: Vec<u8>,
    /// (line, reason, excerpt) of each line that is a reject, in line order.
    pub rejects: Vec<(u64, String, Vec<u8>)>,
    count: u64,
}

impl Lines {
    fn row(&mut self, doc: Map<String, Value>) {
        // serde_json writes no raw line break: one document, one line.
        let text = serde_json::to_vec(&Value::Object(doc)).unwrap_or_default();
        self.text.extend_from_slice(&text);
        self.text.push(b'\n');
        self.count += 1;
    }

    fn reject(&mut self, reason: String, excerpt: &[u8]) {
        self.text.push(b'\n');
        self.count += 1;
        self.rejects.push((self.count, reason, excerpt.to_vec()));
    }

    fn file_reject(reason: String) -> Lines {
        let mut out = Lines::default();
        out.reject(reason, b"");
        out
    }
}

/// Whether the file at `path` starts as a SQLite database does.
pub fn has_magic(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == *MAGIC
}

/// Whether the file is named as OpenCode names its database: `opencode.db`, or
/// `opencode-<channel>.db`.
pub fn has_opencode_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".db"))
        .is_some_and(|n| n == "opencode" || n.starts_with("opencode-"))
}

/// Whether `path` is an OpenCode database: a SQLite file with OpenCode's three tables
/// (`session`, `message` and `part`; other programs' databases have tables of those names
/// too, one or two of them).
pub fn is_database(path: &Path) -> bool {
    has_magic(path)
        && open(path)
            .and_then(|c| tables(&c))
            .is_ok_and(|t| t.iter().all(|&p| p))
}

/// The OpenCode database at `path` read as lines; `None` when the file is not to be read as
/// one (no SQLite header, and not named as OpenCode names its database).
pub fn read_lines(path: &Path) -> Option<Lines> {
    if !has_magic(path) {
        return has_opencode_name(path).then(|| Lines::file_reject(not_sqlite(path)));
    }
    let conn = match open(path) {
        Ok(conn) => conn,
        Err(e) => {
            return Some(Lines::file_reject(format!(
                "SQLite database cannot be opened: {e}"
            )))
        }
    };
    let present = match tables(&conn).or_else(|_| tables_of_damaged(&conn)) {
        Ok(t) if t.iter().any(|&p| p) => t,
        Ok(_) => {
            let reason = "not an OpenCode database: no table `session`, `message` or `part`";
            return Some(Lines::file_reject(reason.into()));
        }
        Err(e) => {
            return Some(Lines::file_reject(format!(
                "SQLite database cannot be read: {e}"
            )))
        }
    };
    let mut out = Lines::default();
    for (table, present) in TABLES.into_iter().zip(present) {
        if present {
            read_table(&conn, table, &mut out);
        } else {
            out.reject(format!("OpenCode database with no table `{table}`"), b"");
        }
    }
    Some(out)
}

/// Why a file named as OpenCode's database is not read as one.
fn not_sqlite(path: &Path) -> String {
    match std::fs::metadata(path) {
        Err(e) => format!("the file cannot be read: {e}"),
        Ok(m) if m.len() == 0 => "an empty file, not a SQLite database".into(),
        Ok(m) if m.len() < 16 => format!("not a SQLite database: {} bytes only", m.len()),
        Ok(_) => "not a SQLite database: the file does not start with `SQLite format 3`".into(),
    }
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

/// Which of [`TABLES`] the database has.
fn tables(conn: &Connection) -> rusqlite::Result<[bool; 3]> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let mut present = [false; 3];
    for name in names {
        let name = name?;
        if let Some(i) = TABLES.iter().position(|t| *t == name) {
            present[i] = true;
        }
    }
    Ok(present)
}

/// Which of [`TABLES`] a database has whose schema does not load as it is (a file cut
/// short: SQLite refuses a schema naming pages past the file's end). With `writable_schema`
/// SQLite reads the schema without that check (nothing is written: the connection is
/// read-only), and the tables whose pages remain can be read.
fn tables_of_damaged(conn: &Connection) -> rusqlite::Result<[bool; 3]> {
    conn.pragma_update(None, "writable_schema", true)?;
    tables(conn)
}

/// Appends one line per row of `table`, in `rowid` order; where the rows stop being
/// readable, one reject line for the rest.
fn read_table(conn: &Connection, table: &str, out: &mut Lines) {
    let mut stmt = match conn.prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid")) {
        Ok(stmt) => stmt,
        Err(e) => return out.reject(format!("table `{table}` cannot be read: {e}"), b""),
    };
    let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
    let mut rows = match stmt.query([]) {
        Ok(rows) => rows,
        Err(e) => return out.reject(format!("table `{table}` cannot be read: {e}"), b""),
    };
    let mut n = 0u64;
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(e) => {
                let reason = format!("table `{table}`: the rows after row {n} cannot be read: {e}");
                return out.reject(reason, b"");
            }
        };
        n += 1;
        let values: Vec<ValueRef> = (0..names.len())
            .map(|i| row.get_ref(i).unwrap_or(ValueRef::Null))
            .collect();
        match row::document(table, &names, &values) {
            Ok(doc) => out.row(doc),
            Err(bad) => {
                let id = match names.iter().position(|c| c == "id").map(|i| values[i]) {
                    Some(ValueRef::Text(t)) => format!("`{}`", String::from_utf8_lossy(t)),
                    _ => format!("{n} (no `id`)"),
                };
                let reason = format!("table `{table}`, row {id}: {}", bad.reason);
                out.reject(reason, &bad.excerpt);
            }
        }
    }
}

/// OpenCode's three tables as its releases from 1.2.0 create them, for tests that build
/// databases of their own.
#[cfg(test)]
pub(crate) const TEST_SCHEMA: &str =
    "CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
       slug text NOT NULL, directory text NOT NULL, title text NOT NULL,
       version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL);
     CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
       time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
     CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
       session_id text NOT NULL, time_created integer NOT NULL,
       time_updated integer NOT NULL, data text NOT NULL);";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_storage_documents_one_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "{TEST_SCHEMA}
             INSERT INTO session VALUES ('ses_1', 'p', NULL, 's', '/w', 't', '1.2.0', 5, 6);
             INSERT INTO message VALUES ('msg_1', 'ses_1', 7, 7,
               '{{\"role\":\"user\",\"time\":{{\"created\":7}}}}');
             INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', 8, 8, '{{\"type\":\"text\"');"
        ))
        .unwrap();
        drop(conn);
        let read = read_lines(&path).unwrap();
        let text = String::from_utf8(read.text).unwrap();
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
        // A broken `data` is a reject on its own line, blank in the text.
        assert_eq!(lines[2], "");
        assert_eq!(read.rejects.len(), 1);
        let (line, reason, excerpt) = &read.rejects[0];
        assert_eq!(*line, 3);
        assert!(reason.starts_with("table `part`, row `prt_1`: `data` is not JSON: "));
        assert_eq!(excerpt, b"{\"type\":\"text\"");
        assert!(is_database(&path));
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (a)")
            .unwrap();
        assert!(!is_database(&other));
        let not_ours = read_lines(&other).unwrap();
        assert_eq!(not_ours.text, b"\n");
        assert!(not_ours.rejects[0]
            .1
            .starts_with("not an OpenCode database"));
        assert_eq!(read_lines(&dir.path().join("missing.db")), None);
        let named = read_lines(&dir.path().join("opencode-dev.db")).unwrap();
        assert!(named.rejects[0].1.starts_with("the file cannot be read"));
    }
}
