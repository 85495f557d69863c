//! A damaged OpenCode database loses nothing else: each is a copy of the real database
//! `tests/samples/opencode-db/real-1.x/opencode.db` (1 session, 4 messages, 13 parts),
//! damaged as disks and crashes damage files (cut short, overwritten, a table gone, a row
//! whose `data` is not JSON, a column gone). What cannot be read is a reject naming the
//! file (and the table and row); the other rows are still mapped, and the other files of
//! the folder still read.

use std::path::{Path, PathBuf};

use runlog_core::ingest::{ingest_paths, IngestOptions, Ingested};

use crate::common::repo;

/// A folder holding a copy of the real database, damaged by `damage`, and a canonical log.
fn folder(damage: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    let real = repo().join("tests/samples/opencode-db/real-1.x/opencode.db");
    std::fs::copy(real, &db).unwrap();
    damage(&db);
    let log = r#"{"seq":1,"ts":"2026-01-01T00:00:00Z","root":"a","session":"a","type":"session/start","data":{}}"#;
    std::fs::write(dir.path().join("other.jsonl"), format!("{log}\n")).unwrap();
    (dir, db)
}

fn sql(db: &Path, text: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(text).unwrap();
}

fn ingest(dir: &Path) -> Ingested {
    ingest_paths(&[dir.to_path_buf()], &IngestOptions::default()).expect("ingest does not abort")
}

/// The database's events (their kinds), and that the folder's other log was read.
fn db_kinds(ing: &Ingested) -> Vec<String> {
    assert!(
        ing.agents.iter().any(|a| a.root == "a"),
        "the folder's other log is read"
    );
    ing.agents
        .iter()
        .filter(|a| a.root != "a")
        .flat_map(|a| a.events.iter().map(|e| e.kind.to_string()))
        .collect()
}

/// The summary of the database file: its lines are its rejects and mapped rows.
fn db_summary(ing: &Ingested, db: &Path) -> runlog_core::ingest::FileSummary {
    let name = db.display().to_string();
    let s = ing.files.iter().find(|f| f.file == name);
    let s = s.unwrap_or_else(|| panic!("{name} is read, not skipped: {:?}", ing.files));
    assert_eq!(s.rejects, ing.rejects.len() as u64, "{:?}", ing.rejects);
    assert!(ing.rejects.iter().all(|r| r.file == name));
    s.clone()
}

#[test]
fn the_intact_database_maps_every_row() {
    let (dir, db) = folder(|_| {});
    let ing = ingest(dir.path());
    let s = db_summary(&ing, &db);
    assert_eq!((s.lines, s.rejects), (18, 0));
    assert!(db_kinds(&ing).contains(&"turn/end".to_string()));
}

#[test]
fn garbage_bytes_are_one_reject() {
    let (dir, db) =
        folder(|db| std::fs::write(db, b"\x00\x17garbage, not SQLite\n\xff\xfe").unwrap());
    let ing = ingest(dir.path());
    let s = db_summary(&ing, &db);
    assert_eq!((s.lines, s.rejects), (1, 1));
    assert_eq!(ing.rejects[0].line, 1);
    assert!(
        ing.rejects[0].reason.contains("not a SQLite database"),
        "{:?}",
        ing.rejects
    );
    assert!(db_kinds(&ing).is_empty());
}

#[test]
fn a_truncated_file_keeps_the_rows_before_the_cut() {
    // Pages 1-5 hold the schema, the session and the message rows; the part table
    // (page 6 on) is cut away.
    let (dir, db) = folder(|db| {
        let f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
        f.set_len(5 * 4096).unwrap();
    });
    let ing = ingest(dir.path());
    let s = db_summary(&ing, &db);
    assert_eq!(s.rejects, 1, "{:?}", ing.rejects);
    let r = &ing.rejects[0];
    assert!(r.reason.contains("table `part`"), "{r:?}");
    assert_eq!(r.line, 6, "after the session and the 4 message rows: {r:?}");
    let kinds = db_kinds(&ing);
    assert!(kinds.contains(&"session/start".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"turn/start".to_string()), "{kinds:?}");
}

/// Wherever the file is cut (inside the header, the schema page, a table, an index), the
/// ingest goes on, and the cut is a reject unless every row was still read (a cut through
/// the indexes only).
#[test]
fn every_cut_is_a_reject() {
    for cut in [10u64, 100, 2000, 4096, 3 * 4096 + 7, 7 * 4096, 9 * 4096 + 1] {
        let (dir, db) = folder(|db| {
            let f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
            f.set_len(cut).unwrap();
        });
        let ing = ingest(dir.path());
        let s = db_summary(&ing, &db);
        assert!(s.rejects >= 1 || s.kept == 18, "cut at {cut}: {s:?}");
        db_kinds(&ing);
    }
}

#[test]
fn a_missing_table_is_a_reject_and_the_others_map() {
    let (dir, db) = folder(|db| sql(db, "DROP TABLE part"));
    let ing = ingest(dir.path());
    let s = db_summary(&ing, &db);
    assert_eq!((s.lines, s.rejects), (6, 1), "{:?}", ing.rejects);
    let r = &ing.rejects[0];
    assert_eq!(r.line, 6);
    assert!(r.reason.contains("no table `part`"), "{r:?}");
    let kinds = db_kinds(&ing);
    assert!(kinds.contains(&"turn/start".to_string()), "{kinds:?}");
    assert!(!kinds.contains(&"tool/call".to_string()), "{kinds:?}");
}

#[test]
fn a_row_with_bad_json_is_a_reject_naming_table_and_row() {
    let bad = "prt_cbbd9b248001pwvRpcBHtIkJj4";
    let (dir, db) = folder(|db| {
        sql(
            db,
            &format!("UPDATE part SET data = '{{\"type\":\"text\",' WHERE id = '{bad}'"),
        )
    });
    let ing = ingest(dir.path());
    let s = db_summary(&ing, &db);
    assert_eq!((s.lines, s.rejects), (18, 1), "{:?}", ing.rejects);
    let r = &ing.rejects[0];
    assert_eq!(
        r.line, 7,
        "the second part row, after 1 session and 4 messages"
    );
    assert!(
        r.reason.contains(&format!("table `part`, row `{bad}`")),
        "{r:?}"
    );
    assert!(r.reason.contains("`data` is not JSON"), "{r:?}");
    assert!(r.excerpt.contains("\"type\""), "{r:?}");
    assert!(db_kinds(&ing).contains(&"turn/end".to_string()));
}

#[test]
fn a_missing_column_rejects_each_row_naming_it() {
    let (dir, db) = folder(|db| sql(db, "ALTER TABLE message DROP COLUMN data"));
    let ing = ingest(dir.path());
    let s = db_summary(&ing, &db);
    assert_eq!((s.lines, s.rejects), (18, 4), "{:?}", ing.rejects);
    let r = &ing.rejects[0];
    assert_eq!(r.line, 2);
    assert!(
        r.reason
            .contains("table `message`, row `msg_cbbd98650001z0awFImeNERFe5`"),
        "{r:?}"
    );
    assert!(r.reason.contains("no column `data`"), "{r:?}");
    assert!(db_kinds(&ing).contains(&"session/start".to_string()));
}

/// Named on its own, a database that is not OpenCode's is one reject, not its bytes read
/// as lines; a folder skips a `.db` file that is neither OpenCode's (all three tables) nor
/// named so, such as another program's with a `session` and a `message` table.
#[test]
fn another_sqlite_database_is_one_reject_when_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.db");
    sql(&db, "CREATE TABLE t (a); INSERT INTO t VALUES ('x\ny')");
    let ing = ingest_paths(std::slice::from_ref(&db), &IngestOptions::default()).unwrap();
    let s = db_summary(&ing, &db);
    assert_eq!((s.lines, s.rejects), (1, 1), "{:?}", ing.rejects);
    assert!(ing.rejects[0].reason.contains("not an OpenCode database"));
    sql(
        &dir.path().join("chat.db"),
        "CREATE TABLE session (id); CREATE TABLE message (id, body)",
    );
    let ing = ingest(dir.path());
    assert_eq!(ing.skipped_files.len(), 2, "{:?}", ing.skipped_files);
}
