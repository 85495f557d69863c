//! OpenCode's session database (`opencode.db`, releases from 1.2.0) reads as the storage
//! folder it was made from (`scripts/opencode-db-fixture.py`): the same events (where they
//! were read aside), turns, tool calls, errors, intervals and agents. `ingest --append`
//! sees the rows OpenCode has written to the database's WAL only.

use std::path::{Path, PathBuf};

/// The rows of `table` read from `input`, sorted, without the columns that name where an
/// event was read (file, line).
fn rows(input: &Path, table: &str) -> Result<Vec<Vec<String>>, String> {
    let opts = runlog_core::ingest::IngestOptions::default();
    let loaded =
        runlog::pipeline::load(&[input.to_path_buf()], &opts).map_err(|e| e.to_string())?;
    let ctx = runlog::query::context_from_batches(loaded.batches().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let sql = format!("SELECT * FROM {table}");
    let (schema, batches) = rt
        .block_on(runlog::query::run_sql(&ctx, &sql))
        .map_err(|e| format!("{table}: {e}"))?;
    let mut buf = Vec::new();
    runlog::query::write_result(
        &mut buf,
        &schema,
        &batches,
        runlog::query::OutputFormat::Json,
    )
    .map_err(|e| e.to_string())?;
    let text = String::from_utf8(buf).map_err(|e| e.to_string())?;
    // One JSON array, or one object a line.
    let records: Vec<serde_json::Value> = match serde_json::from_str(&text) {
        Ok(serde_json::Value::Array(a)) => a,
        _ => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?,
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    for v in records {
        let Some(o) = v.as_object() else {
            return Err(format!("{table}: a row that is not an object: {v}"));
        };
        let row = o
            .iter()
            .filter(|(k, _)| !(k.ends_with("line") || k.ends_with("file")))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.push(row);
    }
    out.sort();
    Ok(out)
}

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples")
}

fn the_database_reads_as_its_storage_folder() {
    if let Err(e) = compare() {
        panic!("{e}");
    }
}

fn compare() -> Result<(), String> {
    for name in ["real-1.x", "shape-1.x"] {
        let folder = samples().join("opencode-storage").join(name);
        let db = samples().join("opencode-db").join(name).join("opencode.db");
        for table in [
            "events",
            "turns",
            "tool_calls",
            "errors",
            "intervals",
            "agents",
        ] {
            let (want, got) = (rows(&folder, table)?, rows(&db, table)?);
            if want.is_empty() && table != "errors" {
                return Err(format!("{name}: no {table} read from the storage folder"));
            }
            if want != got {
                let only = |a: &[Vec<String>], b: &[Vec<String>]| {
                    a.iter()
                        .filter(|r| !b.contains(r))
                        .cloned()
                        .collect::<Vec<_>>()
                };
                return Err(format!(
                    "{name}: {table} differ\n  storage only:  {:?}\n  database only: {:?}",
                    only(&want, &got),
                    only(&got, &want)
                ));
            }
        }
    }
    Ok(())
}

/// A session row, written as OpenCode writes one (the columns without defaults).
fn add_session(conn: &rusqlite::Connection, id: &str, at: i64) {
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,
           time_updated) VALUES (?1, 'global', 'calm-wave', '/w', 'New session', '1.2.15', ?2, ?2)",
        rusqlite::params![id, at],
    )
    .unwrap();
}

/// The agents (roots) of a warehouse.
fn roots(wh: &Path) -> Vec<String> {
    let sql = "SELECT root FROM agents ORDER BY root";
    let out = super::shards::ok(super::shards::runlog(&[
        "query",
        "-w",
        wh.to_str().unwrap(),
        sql,
        "--format",
        "csv",
    ]));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().skip(1).map(str::to_string).collect()
}

/// OpenCode keeps its database open in WAL mode: rows it commits go to `opencode.db-wal`
/// and reach the main file only at a checkpoint. An append after such rows reads them.
fn append_reads_rows_in_the_wal_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    std::fs::copy(samples().join("opencode-db/real-1.x/opencode.db"), &db).unwrap();
    let wh = dir.path().join("wh");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    add_session(&conn, "ses_wal_first", 1_770_000_000_000);
    let append = |wh: &Path| {
        let (db, wh) = (db.to_str().unwrap(), wh.to_str().unwrap());
        super::shards::ok(super::shards::runlog(&["ingest", "--append", db, "-w", wh]));
    };
    append(&wh);
    let file = std::fs::read(&db).unwrap();
    assert!(roots(&wh).contains(&"ses_wal_first".to_string()));
    add_session(&conn, "ses_wal_second", 1_770_000_100_000);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        file,
        "the row is in the WAL only"
    );
    append(&wh);
    let got = roots(&wh);
    assert!(got.contains(&"ses_wal_second".to_string()), "{got:?}");
    assert!(got.contains(&"ses_wal_first".to_string()), "{got:?}");
    // The same rows again: nothing new.
    append(&wh);
    assert_eq!(roots(&wh), got);
}

trials! { the_database_reads_as_its_storage_folder, append_reads_rows_in_the_wal_only }
