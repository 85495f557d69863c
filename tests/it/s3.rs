//! Warehouses on a real S3 server (moto's, started by `.ci/s3`): ingest, shards, query,
//! report, replay and `ingest --append` on `s3://BUCKET/PREFIX` answer as on a local folder, and racing
//! writers rebase there too. Without an endpoint in the environment (AWS_ENDPOINT_URL and
//! RUNLOG_S3_BUCKET, as `.ci/s3` exports) these tests are skipped with a notice, except in
//! CI (CI=true), where a missing server fails them.

use std::path::Path;
use std::process::{Command, Output};

/// The bucket to test in, or `None` (after a notice) when no S3 server is configured.
fn bucket() -> Option<String> {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").ok();
    let bucket = std::env::var("RUNLOG_S3_BUCKET").ok();
    match (endpoint, bucket) {
        (Some(_), Some(b)) => Some(b),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true but no S3 server: run the tests under .ci/s3 (it starts one)")
        }
        _ => {
            eprintln!("notice: S3 tests skipped: no AWS_ENDPOINT_URL / RUNLOG_S3_BUCKET (run under .ci/s3)");
            None
        }
    }
}

/// A fresh warehouse URL in the bucket.
fn fresh(bucket: &str, name: &str) -> String {
    format!(
        "s3://{bucket}/{}-{name}",
        runlog::commit::new_ingest_id().replace('-', "")
    )
}

fn runlog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(args)
        .output()
        .expect("run runlog")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = runlog(args);
    assert!(
        o.status.success(),
        "runlog {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn logs(dir: &Path) -> String {
    let out = dir.join("logs");
    let opts = runlog::gen::GenOptions {
        agents: 60,
        seed: 5,
        files: 2,
        anomalies: 0.05,
        ..Default::default()
    };
    runlog::gen::write(&opts, &out).unwrap();
    out.to_string_lossy().into_owned()
}

/// Every table, rows ordered, as CSV.
fn dump(wh: &str) -> std::collections::BTreeMap<&'static str, String> {
    crate::shards::dump(Path::new(wh))
}

#[test]
fn ingest_query_report_and_replay_on_s3_answer_as_on_a_local_folder() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let local = dir.path().join("wh");
    let local = local.to_str().unwrap();
    let s3 = fresh(&bucket, "full");
    ok(&["ingest", &logs, "-w", local, "-q"]);
    ok(&["ingest", &logs, "-w", &s3, "-q"]);
    assert_eq!(dump(&s3), dump(local));
    let report = |wh: &str| ok(&["report", "--warehouse", wh, "--format", "json"]);
    assert_eq!(report(&s3), report(local));
    let root = String::from_utf8(ok(&[
        "query",
        "-w",
        local,
        "--format",
        "csv",
        "SELECT root FROM agents ORDER BY root LIMIT 1",
    ]))
    .unwrap();
    let root = root.lines().nth(1).unwrap().to_string();
    let replay = |wh: &str| ok(&["replay", "--warehouse", wh, "--root", &root]);
    let r = replay(&s3);
    assert!(!r.is_empty());
    assert_eq!(r, replay(local));
    // A second ingest is version 2; nothing is written outside the warehouse's prefix.
    ok(&["ingest", &logs, "-w", &s3, "-q"]);
    let wh = runlog::objstore::Root::open(Path::new(&s3)).unwrap();
    let versions = runlog::objstore::block_on(runlog::commit::log::versions(&wh)).unwrap();
    assert_eq!(versions, [1, 2]);
    assert_eq!(dump(&s3), dump(local));
}

#[test]
fn shards_on_s3_equal_a_full_ingest() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let local = dir.path().join("wh");
    let local = local.to_str().unwrap();
    ok(&["ingest", &logs, "-w", local, "-q"]);
    let s3 = fresh(&bucket, "shards");
    // At once: the versions race, and the losers rebase on the winners' entries.
    let children: Vec<_> = (0..3)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_runlog"))
                .args([
                    "ingest",
                    &logs,
                    "-w",
                    &s3,
                    "-q",
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
    assert_eq!(dump(&s3), dump(local));
    let m = runlog::commit::read_manifest(Path::new(&s3)).unwrap();
    assert_eq!(m.shards.unwrap().committed.len(), 3);
}

#[test]
fn two_writers_racing_on_s3_one_wins_the_other_rebases() {
    let Some(bucket) = bucket() else { return };
    let url = fresh(&bucket, "race");
    let root = runlog::objstore::Root::open(Path::new(&url)).unwrap();
    crate::commit::two_writers_race(&root);
}

#[test]
fn a_refused_ingest_leaves_an_s3_warehouse_as_it_was() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let logs = logs(dir.path());
    let s3 = fresh(&bucket, "refused");
    ok(&["ingest", &logs, "-w", &s3, "-q"]);
    let before = dump(&s3);
    let list = || {
        let root = runlog::objstore::Root::open(Path::new(&s3)).unwrap();
        let mut names: Vec<String> = runlog::objstore::block_on(async {
            use futures::TryStreamExt;
            root.store
                .list(Some(&root.prefix))
                .try_collect::<Vec<_>>()
                .await
        })
        .unwrap()
        .into_iter()
        .map(|m| m.location.to_string())
        .collect();
        names.sort();
        names
    };
    let objects = list();
    let o = runlog(&["ingest", &logs, "-w", &s3, "--max-rejects", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("too many rejects"));
    assert_eq!(list(), objects);
    assert_eq!(dump(&s3), before);
}

#[test]
fn appends_on_s3_equal_a_full_ingest_and_racing_appenders_all_land() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("logs");
    let opts = runlog::gen::GenOptions {
        agents: 60,
        seed: 6,
        files: 5,
        anomalies: 0.05,
        layout: runlog::gen::Layout::Rotated,
        ..Default::default()
    };
    runlog::gen::write(&opts, &out).unwrap();
    let files: Vec<String> = runlog::ingest::discover(&[out])
        .unwrap()
        .0
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let local = dir.path().join("wh");
    let local = local.to_str().unwrap();
    let mut all = vec!["ingest"];
    all.extend(files.iter().map(String::as_str));
    all.extend(["-w", local, "-q"]);
    ok(&all);
    let s3 = fresh(&bucket, "append");
    ok(&["ingest", "--append", &files[0], "-w", &s3, "-q"]);
    ok(&["ingest", "--append", &files[1], "-w", &s3, "-q"]);
    // The other three at once: the losers plan again on the winners' versions.
    let children: Vec<_> = files[2..]
        .iter()
        .map(|f| {
            Command::new(env!("CARGO_BIN_EXE_runlog"))
                .args(["ingest", "--append", f, "-w", &s3, "-q"])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(dump(&s3), dump(local));
    let wh = runlog::objstore::Root::open(Path::new(&s3)).unwrap();
    let versions = runlog::objstore::block_on(runlog::commit::log::versions(&wh)).unwrap();
    assert_eq!(versions, [1, 2, 3, 4, 5], "one version each");
    // Again: nothing new, nothing committed.
    let o = runlog(&["ingest", "--append", &files[3], "-w", &s3]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("0 new files, 0 new lines"));
    let versions = runlog::objstore::block_on(runlog::commit::log::versions(&wh)).unwrap();
    assert_eq!(versions.len(), 5);
}
