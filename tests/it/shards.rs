//! Sharded ingest (`runlog ingest --shard I/N`): the shards of one N, committed in any order
//! or at once into one warehouse, give exactly the tables of a single full ingest; a shard
//! run again replaces its rows; mixing shard counts is refused unless `--reshard`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use runlog::store;

pub(crate) fn runlog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(args)
        .output()
        .expect("run runlog")
}

pub(crate) fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "runlog failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A generated log with anomalies (duplicates, conflicts, bad lines) in three files.
fn logs(dir: &Path) -> PathBuf {
    let out = dir.join("logs");
    let opts = runlog_gen::GenOptions {
        agents: 120,
        seed: 8,
        files: 3,
        anomalies: 0.05,
        ..Default::default()
    };
    runlog_gen::write(&opts, &out).unwrap();
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An ingest whose garbage collection keeps only the latest version's files, at once (so
/// the files on disk are exactly those the manifest names).
fn ingest(logs: &Path, wh: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "ingest",
        s(logs),
        "--warehouse",
        s(wh),
        "--keep-versions",
        "1",
        "--retention",
        "0s",
    ];
    args.extend_from_slice(extra);
    runlog(&args)
}

/// Every table of a warehouse as CSV, rows ordered by all columns.
pub(crate) fn dump(wh: &Path) -> BTreeMap<&'static str, String> {
    let ctx = runlog::query::context_from_warehouse(wh).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    store::TABLES
        .iter()
        .map(|&t| {
            let n = store::schema(t).fields().len();
            let order: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
            let sql = format!("SELECT * FROM {t} ORDER BY {}", order.join(", "));
            let (schema, batches) = rt.block_on(runlog::query::run_sql(&ctx, &sql)).unwrap();
            let mut out = Vec::new();
            runlog::query::write_result(
                &mut out,
                &schema,
                &batches,
                runlog::query::OutputFormat::Csv,
            )
            .unwrap();
            (t.name(), String::from_utf8(out).unwrap())
        })
        .collect()
}

fn assert_same_tables(a: &Path, b: &Path) {
    let (da, db) = (dump(a), dump(b));
    for t in store::TABLES.iter().map(|t| t.name()) {
        assert!(da[t] == db[t], "table {t} differs between {a:?} and {b:?}");
    }
}

fn rows(d: &BTreeMap<&'static str, String>, t: &str) -> usize {
    d[t].lines().count() - 1
}

/// Column `col` (a string column) of the given Parquet files of a warehouse.
fn strings(wh: &Path, files: &[String], col: usize) -> Vec<String> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let mut out = Vec::new();
    for f in files {
        let file = std::fs::File::open(wh.join(f)).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        for b in reader {
            let b = b.unwrap();
            let a = b.column(col).as_string::<i32>();
            out.extend((0..a.len()).map(|i| a.value(i).to_string()));
        }
    }
    out
}

pub(crate) fn parquet_files_on_disk(wh: &Path) -> usize {
    store::TABLES
        .iter()
        .map(|t| {
            std::fs::read_dir(wh.join(t.name()))
                .map(|rd| {
                    rd.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "parquet"))
                        .count()
                })
                .unwrap_or(0)
        })
        .sum()
}

fn files_in_manifest(wh: &Path) -> usize {
    runlog::commit::read_manifest(wh)
        .unwrap()
        .tables
        .values()
        .map(|v| v.len())
        .sum()
}

fn three_shards_in_scrambled_order_equal_one_full_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let full = dir.path().join("full");
    let sharded = dir.path().join("sharded");
    ok(ingest(&logs, &full, &[]));
    let mut agents = 0;
    for (k, i) in [2, 0, 1].into_iter().enumerate() {
        let shard = format!("{i}/3");
        let o = ok(ingest(
            &logs,
            &sharded,
            &["--shard", &shard, "--summary-json", "-"],
        ));
        let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        agents += summary["agents"].as_u64().unwrap();
        let err = stderr(&o);
        assert!(err.contains(&format!("shard {shard} committed")), "{err}");
        if k == 2 {
            assert!(err.contains("(complete)"), "{err}");
        } else {
            assert!(err.contains("(missing"), "{err}");
        }
    }
    let d = dump(&full);
    // The input exercises every table, the per-agent ones and the shared ones.
    for t in store::TABLES {
        assert!(
            rows(&d, t.name()) > 0,
            "table {t} is empty: the test proves nothing"
        );
    }
    assert_eq!(agents as usize, rows(&d, "agents"));
    assert_same_tables(&full, &sharded);

    let m = runlog::commit::read_manifest(&sharded).unwrap();
    let sh = m.shards.expect("a sharded manifest");
    assert_eq!(sh.count, 3);
    assert_eq!(sh.committed.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
    // Each shard holds only its agents; only shard 0 holds rejects and files.
    for (&i, c) in &sh.committed {
        assert!(c.tables["events"][0].contains(&format!("-s{i}of3-")));
        let roots = strings(&sharded, &c.tables["agents"], 0);
        assert!(!roots.is_empty());
        for r in roots {
            assert_eq!(runlog_core::shard::Shard::of(&r, 3), i, "{r}");
        }
        for t in runlog_core::shard::SHARED_TABLES {
            let n = strings(&sharded, &c.tables[t.name()], 0).len();
            assert_eq!(n > 0, i == 0, "table {t} of shard {i} has {n} rows");
        }
    }
    assert_eq!(parquet_files_on_disk(&sharded), files_in_manifest(&sharded));
}

fn rerunning_a_shard_replaces_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let full = dir.path().join("full");
    let sharded = dir.path().join("sharded");
    ok(ingest(&logs, &full, &[]));
    for i in [0, 1, 2] {
        ok(ingest(&logs, &sharded, &["--shard", &format!("{i}/3")]));
    }
    let before = runlog::commit::read_manifest(&sharded).unwrap();
    for i in [1, 0, 1] {
        ok(ingest(&logs, &sharded, &["--shard", &format!("{i}/3")]));
    }
    assert_same_tables(&full, &sharded);
    let after = runlog::commit::read_manifest(&sharded).unwrap();
    let (b, a) = (before.shards.unwrap(), after.shards.unwrap());
    assert_eq!(b.committed[&2], a.committed[&2], "shard 2 was not touched");
    assert_ne!(b.committed[&1].ingest_id, a.committed[&1].ingest_id);
    // The replaced files are gone from disk.
    assert_eq!(parquet_files_on_disk(&sharded), files_in_manifest(&sharded));
}

fn mixing_shard_counts_is_refused_unless_reshard() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let full = dir.path().join("full");
    let wh = dir.path().join("wh");
    ok(ingest(&logs, &full, &[]));
    ok(ingest(&logs, &wh, &["--shard", "0/3"]));
    ok(ingest(&logs, &wh, &["--shard", "1/3"]));
    let before = dump(&wh);

    // Another N: refused, nothing changes.
    let o = ingest(&logs, &wh, &["--shard", "0/2"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("holds shards 0,1 of 3"), "{err}");
    assert!(err.contains("--reshard"), "{err}");
    assert_eq!(dump(&wh), before);

    // A shard beside a full ingest: refused too.
    let o = ingest(&logs, &full, &["--shard", "0/2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("a full ingest"), "{}", stderr(&o));

    // --reshard drops the shards of 3; the shards of 2 then make the whole.
    let o = ok(ingest(&logs, &wh, &["--shard", "1/2", "--reshard"]));
    assert!(
        stderr(&o).contains("dropped shards 0,1 of 3"),
        "{}",
        stderr(&o)
    );
    let m = runlog::commit::read_manifest(&wh).unwrap().shards.unwrap();
    assert_eq!((m.count, m.committed.len()), (2, 1));
    assert_eq!(parquet_files_on_disk(&wh), files_in_manifest(&wh));
    ok(ingest(&logs, &wh, &["--shard", "0/2"]));
    assert_same_tables(&full, &wh);

    // A full ingest replaces everything, shards included.
    ok(ingest(&logs, &wh, &[]));
    assert!(runlog::commit::read_manifest(&wh).unwrap().shards.is_none());
    assert_same_tables(&full, &wh);
    assert_eq!(parquet_files_on_disk(&wh), files_in_manifest(&wh));

    // Bad shard syntax is a usage error.
    let o = ingest(&logs, &wh, &["--shard", "3/3"]);
    assert_eq!(o.status.code(), Some(2));
}

fn shards_committed_at_once_equal_one_full_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let full = dir.path().join("full");
    let sharded = dir.path().join("sharded");
    ok(ingest(&logs, &full, &[]));
    let children: Vec<_> = (0..3)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_runlog"))
                .args([
                    "ingest",
                    s(&logs),
                    "--warehouse",
                    s(&sharded),
                    "--shard",
                    &format!("{i}/3"),
                ])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_same_tables(&full, &sharded);
    assert!(!sharded.join("_lock").exists());
}

fn file_urls_name_inputs_and_warehouses() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let full = dir.path().join("full");
    let via_url = dir.path().join("via-url");
    ok(ingest(&logs, &full, &[]));
    let logs_url = format!("file://{}", s(&logs));
    let wh_url = format!("file://{}", s(&via_url));
    for i in 0..2 {
        let shard = format!("{i}/2");
        ok(runlog(&[
            "ingest",
            &logs_url,
            "--warehouse",
            &wh_url,
            "--shard",
            &shard,
        ]));
    }
    assert_same_tables(&full, &via_url);
    let o = ok(runlog(&[
        "query",
        "--warehouse",
        &wh_url,
        "--format",
        "csv",
        "SELECT count(*) AS n FROM events",
    ]));
    let want = ok(runlog(&[
        "query",
        "--warehouse",
        s(&full),
        "--format",
        "csv",
        "SELECT count(*) AS n FROM events",
    ]));
    assert_eq!(o.stdout, want.stdout);
    // Schemes that are neither file:// nor an object store runlog opens are refused with a
    // clear message (gs:// and az:// without credentials: `objstore`'s unit tests).
    let o = runlog(&["query", "--warehouse", "hdfs://nn/wh", "SELECT 1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("hdfs:// is not a local location"));
}

trials! {
    three_shards_in_scrambled_order_equal_one_full_ingest,
    rerunning_a_shard_replaces_its_rows,
    mixing_shard_counts_is_refused_unless_reshard,
    shards_committed_at_once_equal_one_full_ingest,
    file_urls_name_inputs_and_warehouses,
}
