//! Every ready query in `queries/` runs against a warehouse of `sample-logs/` and returns
//! rows; the headline ones are checked against the reducer's rows computed directly.

use std::collections::BTreeMap;
use std::path::PathBuf;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use runlog_core::ingest::IngestOptions;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn column_i64(batches: &[RecordBatch], name: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for b in batches {
        let c = cast(b.column_by_name(name).unwrap(), &DataType::Int64).unwrap();
        let a = c.as_primitive::<Int64Type>();
        out.extend((0..a.len()).map(|i| a.value(i)));
    }
    out
}

fn column_str(batches: &[RecordBatch], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let c = cast(b.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
        let a = c.as_string::<i32>();
        out.extend((0..a.len()).map(|i| {
            if a.is_null(i) {
                String::new()
            } else {
                a.value(i).to_string()
            }
        }));
    }
    out
}

fn every_ready_query_returns_rows_on_the_samples() {
    let loaded =
        runlog::pipeline::load(&[root().join("sample-logs")], &IngestOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    runlog::pipeline::write_batches(&wh, &loaded.batches().unwrap(), serde_json::Value::Null)
        .unwrap();
    let ctx = runlog::query::context_from_warehouse(&wh).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();

    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("queries"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "at least 8 ready queries");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut results: BTreeMap<String, Vec<RecordBatch>> = BTreeMap::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let sql = std::fs::read_to_string(f).unwrap();
        assert!(
            sql.starts_with("-- "),
            "{name} starts with a comment saying what it answers"
        );
        assert!(readme.contains(&name), "README lists {name}");
        let (_, batches) = rt
            .block_on(runlog::query::run_sql(&ctx, &sql))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert!(rows > 0, "{name} returned no rows on sample-logs");
        results.insert(name, batches);
    }

    // The headline numbers agree with the reducer's rows.
    let d = &loaded.derived();
    let settled = d.intervals.iter().filter(|i| i.status == "settled").count() as i64;
    assert_eq!(
        column_i64(&results["finish_reasons.sql"], "intervals")
            .iter()
            .sum::<i64>(),
        settled
    );
    let mut by_status: BTreeMap<String, i64> = BTreeMap::new();
    for i in &d.intervals {
        *by_status.entry(i.status.to_string()).or_default() += 1;
    }
    let got: BTreeMap<String, i64> = column_str(&results["interval_status.sql"], "status")
        .into_iter()
        .zip(column_i64(&results["interval_status.sql"], "intervals"))
        .collect();
    assert_eq!(got, by_status);
    let tails = d.runs.iter().filter(|r| r.provisional_tail).count();
    let rows: usize = results["stream_died_on_delta.sql"]
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(rows, tails);
    let mismatches = d
        .errors
        .iter()
        .filter(|e| e.retryable_mismatch == Some(true))
        .count() as i64;
    assert_eq!(
        column_i64(&results["retryable_mismatches.sql"], "errors")
            .iter()
            .sum::<i64>(),
        mismatches
    );
    let input: i64 = d.intervals.iter().map(|i| i.input_tokens).sum();
    assert_eq!(
        column_i64(&results["tokens_by_finish_reason.sql"], "input_tokens")
            .iter()
            .sum::<i64>(),
        input
    );
    let rejects = loaded.ingested.rejects.len() as i64;
    assert_eq!(
        column_i64(&results["rejects_by_reason.sql"], "lines")
            .iter()
            .sum::<i64>(),
        rejects
    );
}

trials! {
    every_ready_query_returns_rows_on_the_samples,
}
