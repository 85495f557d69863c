//! Warehouses on a real S3 server (moto's, started by `.ci/s3`): ingest, shards, query,
//! report, replay and `ingest --append` (also `--shard I/N`) on `s3://BUCKET/PREFIX` answer
//! as on a local folder, and racing writers rebase there too. Without an endpoint in the environment (AWS_ENDPOINT_URL and
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

/// Copies the files under `dir` to objects under the prefix `url` (same relative keys).
fn upload(dir: &Path, url: &str) {
    use object_store::path::Path as ObjPath;
    use object_store::ObjectStoreExt;
    let (store, parsed) = runlog::objstore::remote_store(url).unwrap();
    let prefix = ObjPath::from_url_path(parsed.path()).unwrap();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let key = p
                .strip_prefix(dir)
                .unwrap()
                .components()
                .fold(prefix.clone(), |k, c| {
                    k.join(c.as_os_str().to_string_lossy().as_ref())
                });
            let bytes = std::fs::read(&p).unwrap();
            runlog::objstore::block_on(store.put(&key, bytes.into())).unwrap();
        }
    }
}

/// Output of a run whose input was `from` (a URL prefix), read as if it were `to`.
fn mapped(out: &[u8], from: &str, to: &str) -> String {
    String::from_utf8_lossy(out).replace(from, to)
}

#[test]
fn inputs_on_s3_read_as_the_same_files_in_a_local_folder() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    // sample-logs/ (nested folders, gzip, rejects, duplicates), a generated log, a non-log.
    let local = dir.path().join("in");
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs");
    let copy = Command::new("cp")
        .arg("-r")
        .arg(&samples)
        .arg(&local)
        .status()
        .unwrap();
    assert!(copy.success());
    let opts = runlog::gen::GenOptions {
        agents: 40,
        seed: 9,
        files: 2,
        anomalies: 0.1,
        ..Default::default()
    };
    runlog::gen::write(&opts, &local.join("gen")).unwrap();
    let prefix = fresh(&bucket, "inputs");
    upload(&local, &prefix);
    let local = local.to_str().unwrap();

    // Every table equal, `file` (and rejects') names mapped from the URLs to the folder.
    let from_local = dir.path().join("wh-local");
    let from_s3 = dir.path().join("wh-s3");
    let summary = |input: &str, wh: &Path| {
        let out = ok(&[
            "ingest",
            input,
            "-w",
            wh.to_str().unwrap(),
            "-q",
            "--summary-json",
            "-",
        ]);
        serde_json::from_slice::<serde_json::Value>(&out).unwrap()
    };
    let (a, b) = (
        summary(local, &from_local),
        summary(&format!("{prefix}/"), &from_s3),
    );
    assert!(a["rejects"].as_u64().unwrap() > 0 && a["duplicates"].as_u64().unwrap() > 0);
    for k in [
        "files",
        "skipped_files",
        "lines_read",
        "kept",
        "duplicates",
        "rejects",
        "agents",
    ] {
        assert_eq!(a[k], b[k], "{k}");
    }
    let (dl, ds) = (
        dump(from_local.to_str().unwrap()),
        dump(from_s3.to_str().unwrap()),
    );
    for (t, rows) in &dl {
        assert_eq!(ds[t].replace(&prefix, local), *rows, "table {t}");
    }
    assert!(ds["files"].contains(&format!("{prefix}/handwritten/dirty.jsonl")));
    assert!(
        !ds["files"].contains("runlog-inputs-"),
        "no temporary path is shown"
    );
    // Spilled through partitions on disk, the same.
    let spilled = dir.path().join("wh-spilled");
    let w = spilled.to_str().unwrap();
    ok(&["ingest", &prefix, "-w", w, "-q", "--spill-partitions", "3"]);
    assert_eq!(dump(w), ds);

    // report, query and replay read the same inputs from the store.
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let report = |input: &str| ok(&["report", input, "--format", "json"]);
    assert_eq!(
        mapped(&report(&prefix), &prefix, local),
        text(report(local))
    );
    let sql = "SELECT file, count(*) AS n FROM rejects GROUP BY file ORDER BY file";
    let query = |input: &str| ok(&["query", input, "--format", "csv", sql]);
    let q = mapped(&query(&prefix), &prefix, local);
    assert!(q.contains("dirty.jsonl"), "{q}");
    assert_eq!(q, text(query(local)));
    let root = String::from_utf8(ok(&[
        "query",
        local,
        "--format",
        "csv",
        "SELECT root FROM agents ORDER BY root LIMIT 1",
    ]))
    .unwrap();
    let root = root.lines().nth(1).unwrap().to_string();
    let replay = |input: &str| ok(&["replay", input, "--root", &root]);
    assert_eq!(replay(&prefix), replay(local));

    // A key names one object; local and remote inputs mix.
    let mixed = dir.path().join("wh-mixed");
    let extra = dir.path().join("extra.jsonl");
    std::fs::copy(samples.join("handwritten/basics.jsonl"), &extra).unwrap();
    ok(&[
        "ingest",
        &format!("{prefix}/handwritten/tree.jsonl"),
        extra.to_str().unwrap(),
        "-w",
        mixed.to_str().unwrap(),
        "-q",
    ]);
    let files = dump(mixed.to_str().unwrap())["files"].clone();
    let names: Vec<&str> = files
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    let tree = format!("{prefix}/handwritten/tree.jsonl");
    assert_eq!(names, [extra.to_str().unwrap(), tree.as_str()]);
}

#[test]
fn missing_inputs_on_s3_are_refused_naming_the_url() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let wh = wh.to_str().unwrap();
    let nothing = fresh(&bucket, "nothing");
    let no_bucket = format!("s3://{}-missing/logs/", nothing.rsplit('/').next().unwrap());
    for url in [nothing.clone(), format!("{nothing}/a.jsonl"), no_bucket] {
        let o = runlog(&["ingest", &url, "-w", wh, "-q"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{url}: {err}");
        assert!(err.contains(url.trim_end_matches('/')), "{url}: {err}");
    }
    assert!(!Path::new(wh).join("_log").exists(), "nothing was written");
}

/// A Ballista cluster in this process that shares nothing with the client's session: a
/// scheduler and an executor whose runtimes open object stores from the environment, as
/// Ballista's own `ballista-scheduler` and `ballista-executor` binaries do. Returns the
/// scheduler's `df://` URL.
#[cfg(feature = "ballista")]
async fn cluster() -> String {
    use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
    use ballista_core::serde::BallistaCodec;
    use ballista_core::utils::{default_config_producer, default_session_builder};
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::execution::SessionStateBuilder;
    use std::sync::Arc;

    let runtime = || {
        RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::new(runlog::objstore::EnvStores::default()))
            .build_arc()
    };
    let session = move |config| {
        let state = default_session_builder(config)?;
        Ok(SessionStateBuilder::new_from_existing(state)
            .with_runtime_env(runtime()?)
            .build())
    };
    let addr = ballista_scheduler::standalone::new_standalone_scheduler_with_builder(
        Arc::new(session),
        Arc::new(default_config_producer),
        BallistaCodec::default(),
    )
    .await
    .unwrap();
    let url = format!("http://localhost:{}", addr.port());
    let scheduler = loop {
        match SchedulerGrpcClient::connect(url.clone()).await {
            Ok(s) => break s,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    };
    let state = default_session_builder(default_config_producer()).unwrap();
    ballista_executor::new_standalone_executor_from_builder(
        scheduler,
        2,
        Arc::new(default_config_producer),
        Arc::new(move |_: &datafusion::prelude::SessionConfig| runtime()),
        BallistaCodec::default(),
        (&state).into(),
    )
    .await
    .unwrap();
    format!("df://localhost:{}", addr.port())
}

#[cfg(feature = "ballista")]
#[test]
fn ballista_reads_an_s3_warehouse_standalone_and_on_a_cluster() {
    let Some(bucket) = bucket() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s3 = fresh(&bucket, "ballista");
    ok(&[
        "ingest",
        root.join("sample-logs").to_str().unwrap(),
        "-w",
        &s3,
        "-q",
    ]);
    let sql = root.join("queries/finish_reasons.sql");
    let run = |engine: &str| {
        let args = ["query", "-w", &s3, "--engine", engine, "--format", "csv"];
        let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args(args)
            .arg(&sql)
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let wh = Path::new(&s3);
        let local = runlog::query::context_from_warehouse(wh).unwrap();
        let standalone = runlog::engine::ballista_context(wh, None).await.unwrap();
        crate::ballista::same_answers(&local, &standalone).await;
        let scheduler = cluster().await;
        let remote = runlog::engine::ballista_context(wh, Some(&scheduler))
            .await
            .unwrap();
        crate::ballista::same_answers(&local, &remote).await;
    });
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

#[test]
fn sharded_appends_on_s3_equal_a_full_ingest() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("logs");
    let opts = runlog::gen::GenOptions {
        agents: 60,
        seed: 16,
        files: 4,
        anomalies: 0.05,
        layout: runlog::gen::Layout::Scattered,
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
    let s3 = fresh(&bucket, "shard-append");
    ok(&["ingest", "--append", &files[0], "-w", &s3, "-q"]);
    // Two shards of the rest at once.
    let mut b = vec!["ingest", "--append", "-w", &s3, "-q"];
    b.extend(files[1..].iter().map(String::as_str));
    let children: Vec<_> = ["0/2", "1/2"]
        .into_iter()
        .map(|s| {
            Command::new(env!("CARGO_BIN_EXE_runlog"))
                .args(&b)
                .args(["--shard", s])
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
    assert_eq!(versions, [1, 2, 3], "one version each");
    assert!(runlog::commit::read_latest(&wh).unwrap().round.is_none());
}
