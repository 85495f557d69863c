//! `--engine ballista`: every ready query in `queries/` and the report run on a standalone
//! Apache Ballista cluster (scheduler and executor in this process) and on the local
//! DataFusion engine over one warehouse of `sample-logs/`, and give the same rows; so does
//! a warehouse written by three ingest shards.
#![cfg(feature = "ballista")]

use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::SessionContext;
use runlog_core::ingest::IngestOptions;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Rows as text, one string per row; floats rounded to 9 decimals (the engines may add
/// partial sums in another order).
fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let mut cols: Vec<Vec<String>> = Vec::new();
        for c in b.columns() {
            let mut v = Vec::with_capacity(c.len());
            if matches!(c.data_type(), DataType::Float32 | DataType::Float64) {
                let f = cast(c, &DataType::Float64).unwrap();
                let f = f.as_primitive::<Float64Type>();
                for i in 0..f.len() {
                    v.push(if f.is_null(i) {
                        "NULL".into()
                    } else {
                        format!("{:.9}", f.value(i))
                    });
                }
            } else {
                let fmt = ArrayFormatter::try_new(c.as_ref(), &opts).unwrap();
                for i in 0..c.len() {
                    v.push(fmt.value(i).to_string());
                }
            }
            cols.push(v);
        }
        for i in 0..b.num_rows() {
            out.push(
                cols.iter()
                    .map(|c| c[i].as_str())
                    .collect::<Vec<_>>()
                    .join(" | "),
            );
        }
    }
    out
}

fn ready_queries() -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("queries"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            (
                f.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&f).unwrap(),
            )
        })
        .collect()
}

/// Runs every ready query on both contexts and asserts the same columns and rows.
pub(crate) async fn same_answers(local: &SessionContext, ballista: &SessionContext) {
    let queries = ready_queries();
    assert!(queries.len() >= 14, "the ready queries are found");
    for (name, sql) in &queries {
        let (ls, lb) = runlog::query::run_sql(local, sql)
            .await
            .unwrap_or_else(|e| panic!("{name} locally: {e}"));
        let (bs, bb) = runlog::query::run_sql(ballista, sql)
            .await
            .unwrap_or_else(|e| panic!("{name} on Ballista: {e}"));
        // Column names and types; a string may come back as Utf8 from one engine and as
        // Utf8View from the other (Ballista's plan serialization): the same logical type.
        let names = |s: &datafusion::arrow::datatypes::Schema| {
            s.fields()
                .iter()
                .map(|f| {
                    let t = match f.data_type() {
                        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
                        t => t.clone(),
                    };
                    (f.name().clone(), t)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&ls), names(&bs), "{name}: columns");
        let (mut l, mut b) = (rows(&lb), rows(&bb));
        assert!(!l.is_empty(), "{name} returned no rows");
        // Compared as sorted lists: rows whose ORDER BY keys tie (retryable_mismatches.sql
        // has such) come back in either order, from either engine.
        l.sort();
        b.sort();
        assert_eq!(l, b, "{name}: rows");
    }
}

fn warehouse_of_samples(dir: &Path) -> PathBuf {
    let wh = dir.join("wh");
    let loaded =
        runlog::pipeline::load(&[root().join("sample-logs")], &IngestOptions::default()).unwrap();
    runlog::pipeline::write_batches(&wh, &loaded.batches().unwrap(), serde_json::Value::Null)
        .unwrap();
    wh
}

fn ready_queries_and_report_are_the_same_on_standalone_ballista() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(same_on_standalone_ballista());
}

async fn same_on_standalone_ballista() {
    let dir = tempfile::tempdir().unwrap();
    let wh = warehouse_of_samples(dir.path());
    let local = runlog::query::context_from_warehouse(&wh).unwrap();
    let ballista = runlog::engine::ballista_context(&wh, None)
        .await
        .expect("a standalone Ballista cluster");
    same_answers(&local, &ballista).await;

    let a = runlog::report::build(&local).await.unwrap();
    let b = runlog::report::build(&ballista).await.unwrap();
    assert_eq!(
        runlog::report::render_text(&a),
        runlog::report::render_text(&b)
    );

    // A warehouse of three shards, on Ballista, answers as the full one does locally.
    let sharded = dir.path().join("sharded");
    for i in [1, 2, 0] {
        let shard = runlog_core::shard::Shard { index: i, count: 3 };
        let write = runlog::pipeline::WriteOptions {
            commit: runlog::pipeline::CommitMode::Shard {
                shard,
                reshard: false,
            },
            memory: runlog::pipeline::Memory::InMemory,
            max_rejects: None,
            gc: Default::default(),
        };
        runlog::pipeline::ingest(
            &[root().join("sample-logs")],
            &IngestOptions::default(),
            &sharded,
            &write,
        )
        .unwrap();
    }
    let on_shards = runlog::engine::ballista_context(&sharded, None)
        .await
        .unwrap();
    same_answers(&local, &on_shards).await;
}

fn the_binary_runs_a_query_on_ballista() {
    let dir = tempfile::tempdir().unwrap();
    let wh = warehouse_of_samples(dir.path());
    let run = |engine: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args(["query", "--warehouse"])
            .arg(&wh)
            .args(["--engine", engine, "--format", "csv"])
            .arg(root().join("queries/finish_reasons.sql"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    assert_eq!(run("ballista"), run("local"));
}

trials! {
    ready_queries_and_report_are_the_same_on_standalone_ballista,
    the_binary_runs_a_query_on_ballista,
}
