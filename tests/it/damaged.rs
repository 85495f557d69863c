//! A warehouse runlog did not write, or one damaged on disk: every command that reads it
//! fails with one clear line on stderr and exit status 1, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};

fn runlog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(args)
        .output()
        .expect("run runlog")
}

/// A warehouse of the shipped sample logs, and one of its roots.
fn warehouse(dir: &Path) -> (PathBuf, String) {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs");
    let wh = dir.join("wh");
    let o = runlog(&[
        "ingest",
        samples.to_str().unwrap(),
        "-w",
        wh.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = runlog(&[
        "query",
        "-w",
        wh.to_str().unwrap(),
        "SELECT root FROM agents ORDER BY root LIMIT 1",
        "--format",
        "csv",
    ]);
    let root = String::from_utf8_lossy(&o.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    (wh, root)
}

/// The warehouse's latest version in its log (`_log/<N>.json`, N zero-padded).
fn latest_version(wh: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(wh.join("_log"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v.pop().expect("a committed version")
}

fn manifest(wh: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(latest_version(wh)).unwrap()).unwrap()
}

fn set_manifest(wh: &Path, m: &serde_json::Value) {
    std::fs::write(latest_version(wh), serde_json::to_vec(m).unwrap()).unwrap();
}

fn events_files(wh: &Path) -> Vec<PathBuf> {
    manifest(wh)["tables"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| wh.join(f.as_str().unwrap()))
        .collect()
}

/// Runs the reading commands on `wh`; each must fail with one line naming `expect`.
fn each_fails(wh: &Path, root: &str, expect: &str) {
    let w = wh.to_str().unwrap();
    for args in [
        vec!["query", "-w", w, "SELECT count(*) FROM events"],
        vec!["report", "-w", w],
        vec!["replay", "-w", w, "--root", root],
    ] {
        let o = runlog(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("runlog: "), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}

fn a_column_of_the_wrong_type() {
    let dir = tempfile::tempdir().unwrap();
    let (wh, root) = warehouse(dir.path());
    // Every events file replaced by one whose seq is text: a foreign table.
    let schema = Arc::new(Schema::new(vec![
        Field::new("root", DataType::Utf8, false),
        Field::new("session", DataType::Utf8, false),
        Field::new("turn", DataType::Utf8, true),
        Field::new("seq", DataType::Utf8, false),
        Field::new("ts", DataType::Int64, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("data", DataType::Utf8, false),
        Field::new("line", DataType::Int64, false),
    ]));
    let s = |v: &str| Arc::new(StringArray::from(vec![v])) as _;
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            s(&root),
            s(&root),
            Arc::new(StringArray::from(vec![None::<&str>])),
            s("one"),
            Arc::new(Int64Array::from(vec![0])),
            s("progress"),
            s("{}"),
            Arc::new(Int64Array::from(vec![1])),
        ],
    )
    .unwrap();
    for f in events_files(&wh) {
        let file = std::fs::File::create(&f).unwrap();
        let mut w =
            datafusion::parquet::arrow::ArrowWriter::try_new(file, schema.clone(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    let w = wh.to_str().unwrap();
    let o = runlog(&["replay", "-w", w, "--root", &root]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("column seq is Utf8"), "{err}");
    assert!(err.contains("not Int64"), "{err}");
    let o = runlog(&["query", "-w", w, "SELECT sum(seq) FROM events"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

fn a_table_missing_from_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let (wh, root) = warehouse(dir.path());
    let mut m = manifest(&wh);
    m["tables"].as_object_mut().unwrap().remove("events");
    set_manifest(&wh, &m);
    each_fails(&wh, &root, "names no table events");
}

fn a_truncated_parquet_file() {
    let dir = tempfile::tempdir().unwrap();
    let (wh, root) = warehouse(dir.path());
    let f = &events_files(&wh)[0];
    let bytes = std::fs::read(f).unwrap();
    std::fs::write(f, &bytes[..bytes.len() / 2]).unwrap();
    each_fails(&wh, &root, "is not a whole Parquet file");
}

fn a_manifest_naming_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let (wh, root) = warehouse(dir.path());
    let f = &events_files(&wh)[0];
    std::fs::remove_file(f).unwrap();
    each_fails(&wh, &root, "is missing");
}

trials! {
    a_column_of_the_wrong_type,
    a_table_missing_from_the_manifest,
    a_truncated_parquet_file,
    a_manifest_naming_a_missing_file,
}
