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
    let opts = runlog_gen::GenOptions {
        agents: 60,
        seed: 5,
        files: 2,
        anomalies: 0.05,
        ..Default::default()
    };
    runlog_gen::write(&opts, &out).unwrap();
    out.to_string_lossy().into_owned()
}

/// Every table, rows ordered, as CSV.
fn dump(wh: &str) -> std::collections::BTreeMap<&'static str, String> {
    crate::shards::dump(Path::new(wh))
}

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

fn two_writers_racing_on_s3_one_wins_the_other_rebases() {
    let Some(bucket) = bucket() else { return };
    let url = fresh(&bucket, "race");
    let root = runlog::objstore::Root::open(Path::new(&url)).unwrap();
    crate::commit::two_writers_race(&root);
}

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
    let opts = runlog_gen::GenOptions {
        agents: 40,
        seed: 9,
        files: 2,
        anomalies: 0.1,
        ..Default::default()
    };
    runlog_gen::write(&opts, &local.join("gen")).unwrap();
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

fn appends_on_s3_equal_a_full_ingest_and_racing_appenders_all_land() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (files, local) = logs_and_full_ingest(dir.path(), 6, 5, runlog_gen::Layout::Rotated);
    let local = local.as_str();
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

/// Writes `bytes` to the object `url`.
fn put(url: &str, bytes: Vec<u8>) {
    use object_store::ObjectStoreExt;
    let (store, parsed) = runlog::objstore::remote_store(url).unwrap();
    let key = object_store::path::Path::from_url_path(parsed.path()).unwrap();
    runlog::objstore::block_on(store.put(&key, bytes.into())).unwrap();
}

/// Deletes the object `url`.
fn delete(url: &str) {
    use object_store::ObjectStoreExt;
    let (store, parsed) = runlog::objstore::remote_store(url).unwrap();
    let key = object_store::path::Path::from_url_path(parsed.path()).unwrap();
    runlog::objstore::block_on(store.delete(&key)).unwrap();
}

/// `runlog ingest --append ARGS... -w WH --summary-json -`: the summary and the text output.
fn append(inputs: &[&str], wh: &str) -> (serde_json::Value, String) {
    let mut args = vec!["ingest", "--append"];
    args.extend(inputs);
    args.extend(["-w", wh, "--summary-json", "-"]);
    let o = runlog(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "runlog {args:?}: {err}");
    (serde_json::from_slice(&o.stdout).unwrap(), err)
}

fn versions_of(wh: &str) -> Vec<u64> {
    let root = runlog::objstore::Root::open(Path::new(wh)).unwrap();
    runlog::objstore::block_on(runlog::commit::log::versions(&root)).unwrap()
}

/// Generated logs (60 agents, 5% anomalies) in `files` files under `dir/logs`, and a full
/// local ingest of them into `dir/wh`: the logs' paths, in the order ingest reads them, and
/// the warehouse.
fn logs_and_full_ingest(
    dir: &Path,
    seed: u64,
    files: u32,
    layout: runlog_gen::Layout,
) -> (Vec<String>, String) {
    let out = dir.join("logs");
    let opts = runlog_gen::GenOptions {
        agents: 60,
        seed,
        files,
        anomalies: 0.05,
        layout,
        ..Default::default()
    };
    runlog_gen::write(&opts, &out).unwrap();
    let files: Vec<String> = runlog_core::ingest::discover(&[out])
        .unwrap()
        .0
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let local = dir.join("wh").to_string_lossy().into_owned();
    let mut all = vec!["ingest"];
    all.extend(files.iter().map(String::as_str));
    all.extend(["-w", &local, "-q"]);
    ok(&all);
    (files, local)
}

/// Clean generated logs (no duplicates or conflicts: appends stay incremental) in `n`
/// files under `dir`; their paths, in the order ingest reads them.
fn clean_logs(dir: &Path, n: u32, seed: u64) -> Vec<std::path::PathBuf> {
    let opts = runlog_gen::GenOptions {
        agents: 60,
        seed,
        files: n,
        anomalies: 0.0,
        layout: runlog_gen::Layout::Rotated,
        ..Default::default()
    };
    runlog_gen::write(&opts, dir).unwrap();
    runlog_core::ingest::discover(&[dir.to_path_buf()])
        .unwrap()
        .0
}

/// The URL of the object that the file `f` of the local folder `folder` is uploaded to
/// under `prefix` (by [`upload`]).
fn object_url(prefix: &str, folder: &Path, f: &Path) -> String {
    let rel = f.strip_prefix(folder).unwrap().to_string_lossy();
    format!("{prefix}/{rel}")
}

/// Every table of `wh` (its inputs under the prefix `from`) equals that of `full` (the same
/// inputs in the local folder `to`).
fn assert_same_mapped(wh: &str, from: &str, full: &str, to: &str) {
    let (got, want) = (dump(wh), dump(full));
    for (t, rows) in &want {
        assert_eq!(got[t].replace(from, to), *rows, "table {t}");
    }
}

fn appends_of_a_growing_prefix_equal_a_full_ingest_of_its_final_files() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("logs");
    let files = clean_logs(&folder, 6, 11);
    let prefix = fresh(&bucket, "daily");
    let url = |f: &Path| object_url(&prefix, &folder, f);
    let text = |f: &Path| std::fs::read(f).unwrap();
    let lines = |f: &Path| -> Vec<Vec<u8>> {
        text(f)
            .split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    };
    let wh = fresh(&bucket, "daily-wh");
    let listing = format!("{prefix}/");
    // Day 1: the first 3/5 of file 0 (it grows on day 2), file 1 with a line changed (it
    // is written again on day 3), file 2.
    let all0 = lines(&files[0]);
    put(&url(&files[0]), all0[..all0.len() * 3 / 5].concat());
    let mut other1 = lines(&files[1]);
    other1[2] = b"{\"not\": \"the final line\"}\n".to_vec();
    put(&url(&files[1]), other1.concat());
    put(&url(&files[2]), text(&files[2]));
    let (v, _) = append(&[&listing], &wh);
    assert_eq!(
        (v["new_files"].as_u64(), v["downloaded_files"].as_u64()),
        (Some(3), Some(3))
    );
    // Day 2: a new file, and file 0 written again longer: only those two are downloaded.
    put(&url(&files[3]), text(&files[3]));
    put(&url(&files[0]), text(&files[0]));
    let (v, out) = append(&[&listing], &wh);
    assert!(
        out.contains("1 new files") && out.contains("1 grown, 0 changed, 2 unchanged"),
        "{out}"
    );
    assert!(!out.contains("read every input again"), "{out}");
    assert!(out.contains("downloaded 2 object(s)"), "{out}");
    let day2_bytes =
        std::fs::metadata(&files[0]).unwrap().len() + std::fs::metadata(&files[3]).unwrap().len();
    assert_eq!(v["downloaded_files"], 2);
    assert_eq!(v["downloaded_bytes"].as_u64(), Some(day2_bytes));
    // Day 3: two new files, and file 1 replaced by different content.
    put(&url(&files[4]), text(&files[4]));
    put(&url(&files[5]), text(&files[5]));
    put(&url(&files[1]), text(&files[1]));
    let (v, out) = append(&[&listing], &wh);
    assert!(
        out.contains("2 new files") && out.contains("0 grown, 1 changed, 3 unchanged"),
        "{out}"
    );
    assert!(
        out.contains("3 object(s) unchanged by their listing"),
        "{out}"
    );
    assert_eq!(v["downloaded_files"], 3);

    let full = dir.path().join("full");
    let full = full.to_str().unwrap();
    ok(&["ingest", folder.to_str().unwrap(), "-w", full, "-q"]);
    assert_same_mapped(&wh, &prefix, full, folder.to_str().unwrap());
    assert!(dump(&wh)["files"].contains(&url(&files[5])));

    // Again, unchanged: nothing downloaded, nothing committed.
    let before = versions_of(&wh);
    let (v, out) = append(&[&listing], &wh);
    assert!(out.contains("0 new files, 0 new lines"), "{out}");
    assert_eq!(
        (
            v["downloaded_files"].as_u64(),
            v["downloaded_bytes"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(v["committed"], false);
    assert_eq!(versions_of(&wh), before);
}

fn an_append_that_must_read_a_deleted_object_again_is_refused_naming_it() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("logs");
    let files = clean_logs(&folder, 3, 12);
    let prefix = fresh(&bucket, "gone");
    upload(&folder, &prefix);
    let listing = format!("{prefix}/");
    // A full ingest: not stored in buckets, so the first append reads every input again.
    let wh = dir.path().join("wh");
    let wh = wh.to_str().unwrap();
    ok(&["ingest", &listing, "-w", wh, "-q"]);
    let before = dump(wh);
    // The full ingest recorded the objects' stamps: an append of the prefix downloads none.
    let (v, out) = append(&[&listing], wh);
    assert!(out.contains("0 new files, 0 new lines"), "{out}");
    assert_eq!(v["downloaded_files"], 0);
    let extra = dir.path().join("extra.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs/handwritten/basics.jsonl"),
        &extra,
    )
    .unwrap();
    let extra = extra.to_str().unwrap();
    let gone = object_url(&prefix, &folder, &files[1]);
    let bytes = std::fs::read(&files[1]).unwrap();
    delete(&gone);
    // Its own temporary folder: the downloads must be gone from it after the refusal.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["ingest", "--append", extra, "-w", wh])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{gone}, ingested before, is not there")),
        "{err}"
    );
    assert!(err.contains("Nothing was written"), "{err}");
    assert_eq!(versions_of(wh), [1]);
    assert_eq!(dump(wh), before);
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "downloads removed"
    );
    // Back: the append reads every input again, the objects downloaded from their URLs
    // once each, and equals a full ingest of them all.
    put(&gone, bytes);
    let (v, out) = append(&[extra], wh);
    assert!(out.contains("read every input again"), "{out}");
    assert_eq!(v["new_files"], 1);
    assert_eq!(v["downloaded_files"], 3);
    let full = dir.path().join("full");
    let full = full.to_str().unwrap();
    ok(&["ingest", &listing, extra, "-w", full, "-q"]);
    assert_eq!(dump(wh), dump(full));
}

fn appends_of_local_and_s3_inputs_together_equal_a_full_ingest() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote");
    let remote_files = clean_logs(&remote, 3, 13);
    let local = dir.path().join("local");
    let local_files = clean_logs(&local, 3, 14);
    let prefix = fresh(&bucket, "mixed");
    let url = |f: &Path| object_url(&prefix, &remote, f);
    let listing = format!("{prefix}/");
    let local_dir = local.to_str().unwrap();
    // Day 1: two objects, two local files (the third of each kept for day 2).
    let held_local = dir.path().join("held.jsonl");
    std::fs::rename(&local_files[2], &held_local).unwrap();
    for f in &remote_files[..2] {
        put(&url(f), std::fs::read(f).unwrap());
    }
    let wh = fresh(&bucket, "mixed-wh");
    let (v, _) = append(&[local_dir, &listing], &wh);
    assert_eq!(
        (v["new_files"].as_u64(), v["downloaded_files"].as_u64()),
        (Some(4), Some(2))
    );
    // Day 2: one more of each.
    put(
        &url(&remote_files[2]),
        std::fs::read(&remote_files[2]).unwrap(),
    );
    std::fs::rename(&held_local, &local_files[2]).unwrap();
    let (v, out) = append(&[&listing, local_dir], &wh);
    assert!(
        out.contains("2 new files") && out.contains("4 unchanged"),
        "{out}"
    );
    assert_eq!(v["downloaded_files"], 1);
    let full = dir.path().join("full");
    let full = full.to_str().unwrap();
    ok(&["ingest", local_dir, &listing, "-w", full, "-q"]);
    assert_eq!(dump(&wh), dump(full));
    let files = dump(&wh)["files"].clone();
    assert!(
        files.contains(&url(&remote_files[2])) && files.contains(local_files[2].to_str().unwrap())
    );
}

/// Appenders racing: a loser plans again on the winner's version without downloading its
/// object again.
fn racing_appenders_of_objects_download_each_object_once() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("logs");
    let files = clean_logs(&folder, 8, 15);
    let prefix = fresh(&bucket, "race-in");
    upload(&folder, &prefix);
    let urls: Vec<(std::path::PathBuf, u64)> = files
        .iter()
        .map(|f| {
            let size = std::fs::metadata(f).unwrap().len();
            (
                std::path::PathBuf::from(object_url(&prefix, &folder, f)),
                size,
            )
        })
        .collect();
    let root = runlog::objstore::Root::in_memory("append-objects-race");
    let io = runlog_core::IngestOptions::default();
    let gc = runlog::commit::GcPolicy::default();
    let replanned: usize = std::thread::scope(|sc| {
        let runs: Vec<_> = urls
            .iter()
            .map(|(url, size)| {
                let (root, io) = (&root, io.clone());
                sc.spawn(move || {
                    let a = runlog::append::append(
                        root,
                        &runlog::inputs::list(std::slice::from_ref(url)).unwrap(),
                        &io,
                        gc,
                        None,
                        None,
                    )
                    .unwrap();
                    assert!(a.manifest.is_some());
                    assert_eq!(
                        (a.downloaded_files, a.downloaded_bytes),
                        (1, *size),
                        "{url:?}, planned again {} time(s)",
                        a.replanned
                    );
                    a.replanned
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).sum()
    });
    assert!(replanned > 0, "the appenders raced");
    let m = runlog::commit::read_latest(&root).unwrap();
    assert_eq!(m.inputs.len(), 8);
    assert!(m.inputs.values().all(|fp| fp.object.is_some()), "stamped");
}

fn sharded_appends_on_s3_equal_a_full_ingest() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (files, local) = logs_and_full_ingest(dir.path(), 16, 4, runlog_gen::Layout::Scattered);
    let local = local.as_str();
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

trials! {
    ingest_query_report_and_replay_on_s3_answer_as_on_a_local_folder,
    shards_on_s3_equal_a_full_ingest,
    two_writers_racing_on_s3_one_wins_the_other_rebases,
    a_refused_ingest_leaves_an_s3_warehouse_as_it_was,
    inputs_on_s3_read_as_the_same_files_in_a_local_folder,
    missing_inputs_on_s3_are_refused_naming_the_url,
    #[cfg(feature = "ballista")] ballista_reads_an_s3_warehouse_standalone_and_on_a_cluster,
    appends_on_s3_equal_a_full_ingest_and_racing_appenders_all_land,
    appends_of_a_growing_prefix_equal_a_full_ingest_of_its_final_files,
    an_append_that_must_read_a_deleted_object_again_is_refused_naming_it,
    appends_of_local_and_s3_inputs_together_equal_a_full_ingest,
    racing_appenders_of_objects_download_each_object_once,
    sharded_appends_on_s3_equal_a_full_ingest,
}
