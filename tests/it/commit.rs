//! The commit protocol end to end: a refused ingest leaves the warehouse byte for byte as
//! it was in every mode; the spill folder of a killed ingest is collected by the next one;
//! two processes racing for the warehouse lock never both hold it. The version log on
//! in-memory and local stores: racing writers rebase and all land, a store that ignores
//! put-if-absent is refused, garbage collection keeps the last versions' files (a query
//! racing it reads all its rows), and a warehouse from before the log migrates.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn runlog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(args)
        .output()
        .expect("run runlog")
}

/// Every file below `dir` (relative path → bytes); folders too, as empty entries.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if p.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A log of `agents` agents with one malformed line and one conflicting duplicate (a reject
/// that is found only when the agent is assembled, after a spill's partitions are written).
fn log_with_rejects(agents: usize) -> String {
    let mut s = String::new();
    for a in 0..agents {
        for seq in 1..=5 {
            s.push_str(&format!(
                "{{\"seq\":{seq},\"ts\":\"2026-11-03T10:00:0{seq}.000Z\",\"root\":\"r{a}\",\"session\":\"r{a}\",\"type\":\"progress\",\"data\":{{\"n\":{seq}}}}}\n"
            ));
        }
    }
    s.push_str("not json at all\n");
    s.push_str("{\"seq\":3,\"ts\":\"2026-11-03T10:00:03.000Z\",\"root\":\"r0\",\"session\":\"r0\",\"type\":\"progress\",\"data\":{\"n\":99}}\n");
    s
}

fn good_log(agents: usize) -> String {
    let mut s = log_with_rejects(agents);
    let keep = s.lines().count() - 2;
    s = s.lines().take(keep).collect::<Vec<_>>().join("\n");
    s.push('\n');
    s
}

fn a_refused_ingest_leaves_the_warehouse_as_it_was_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jsonl");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&good, good_log(40)).unwrap();
    std::fs::write(&bad, log_with_rejects(60)).unwrap();
    let (good, bad) = (good.to_str().unwrap(), bad.to_str().unwrap());

    // A full warehouse, refused in memory and spilled.
    let full = dir.path().join("full");
    let fw = full.to_str().unwrap();
    assert!(runlog(&["ingest", good, "-w", fw, "-q"]).status.success());
    // A sharded warehouse, refused in memory and spilled.
    let sharded = dir.path().join("sharded");
    let sw = sharded.to_str().unwrap();
    for s in ["0/2", "1/2"] {
        assert!(runlog(&["ingest", good, "-w", sw, "--shard", s, "-q"])
            .status
            .success());
    }
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (fw, vec![]),
        (fw, vec!["--spill-partitions", "4"]),
        (sw, vec!["--shard", "1/2"]),
        (sw, vec!["--shard", "0/2", "--spill-partitions", "3"]),
    ];
    for (wh, extra) in cases {
        let before = snapshot(Path::new(wh));
        assert!(!before.is_empty());
        let mut args = vec!["ingest", bad, "-w", wh, "--max-rejects", "1"];
        args.extend(&extra);
        let o = runlog(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {err}");
        assert!(
            err.contains("too many rejects: 2 of 302 lines"),
            "{extra:?}: {err}"
        );
        assert!(
            snapshot(Path::new(wh)) == before,
            "{extra:?}: the warehouse changed"
        );
        // The same ingest allowed to go through does commit (the refusal was the limit's).
        let mut args = vec!["ingest", bad, "-w", wh, "--max-rejects", "2", "-q"];
        args.extend(&extra);
        assert!(runlog(&args).status.success(), "{extra:?}");
        // Back to the state of the next case.
        let restore: Vec<&str> = if extra.contains(&"--shard") {
            vec!["--shard", extra[1]]
        } else {
            vec![]
        };
        let mut args = vec!["ingest", good, "-w", wh, "-q"];
        args.extend(&restore);
        assert!(runlog(&args).status.success());
    }

    // A refused ingest into a folder that did not exist does not create it.
    for extra in [vec![], vec!["--spill-partitions", "2"]] {
        let missing = dir.path().join("not/yet/there");
        let mut args = vec![
            "ingest",
            bad,
            "-w",
            missing.to_str().unwrap(),
            "--max-rejects",
            "0",
        ];
        args.extend(&extra);
        assert_eq!(runlog(&args).status.code(), Some(1));
        assert!(!dir.path().join("not").exists(), "{extra:?}");
    }
}

fn the_spill_folder_of_a_killed_ingest_is_removed_by_the_next_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let o = runlog(&[
        "gen",
        "--agents",
        "1500",
        "--seed",
        "3",
        "--files",
        "2",
        "--out",
        logs.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let wh = dir.path().join("wh");
    let spills = |wh: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(wh)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .unwrap()
                            .to_string_lossy()
                            .starts_with("_spill-")
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut killed = false;
    for _attempt in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args([
                "ingest",
                logs.to_str().unwrap(),
                "-w",
                wh.to_str().unwrap(),
                "--spill-partitions",
                "8",
                "-q",
            ])
            .spawn()
            .unwrap();
        let start = Instant::now();
        // Killed while it spills: once a partition file is there.
        let spilling = |wh: &Path| spills(wh).iter().any(|d| d.join("p00000.bin").exists());
        while !spilling(&wh) && start.elapsed() < Duration::from_secs(60) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        if !status.success() && !spills(&wh).is_empty() {
            killed = true;
            break;
        }
    }
    assert!(killed, "no ingest was killed while it spilled");
    let o = runlog(&[
        "ingest",
        logs.to_str().unwrap(),
        "-w",
        wh.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(spills(&wh), Vec::<PathBuf>::new());
}

/// Rounds each racer makes.
const RACE_ROUNDS: usize = 2000;

/// One racer (run as a child process by the test below): takes and releases the lock
/// `RACE_ROUNDS` times; while it holds it, creates a marker file that must not exist.
fn lock_racer() {
    let Ok(dir) = std::env::var("RUNLOG_LOCK_RACE_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let marker = dir.join("held");
    let mut held = 0;
    while held < RACE_ROUNDS {
        let lock = match runlog::commit::WarehouseLock::acquire(&dir) {
            Ok(l) => l,
            Err(runlog::error::Error::Warehouse { .. }) => {
                std::thread::yield_now();
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .expect("the lock is held by one process at a time");
        lock.verify().unwrap();
        std::fs::remove_file(&marker).unwrap();
        drop(lock);
        held += 1;
    }
    println!("racer held the lock {held} times");
}

fn two_processes_racing_for_the_lock_never_both_hold_it() {
    let dir = tempfile::tempdir().unwrap();
    // Both racers run at once.
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "commit::lock_racer",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("RUNLOG_LOCK_RACE_DIR", dir.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.contains(&format!("racer held the lock {RACE_ROUNDS} times")),
            "{out}"
        );
    }
    assert!(!dir.path().join("_lock").exists());
}

// ---- The version log on object stores (`runlog::commit::log`) ----

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path as ObjPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use runlog::commit::log;
use runlog::commit::Manifest;
use runlog::objstore::Root;

/// A manifest whose `events` table is `base`'s files and `file`: a commit that adds one
/// file to whatever version it builds on (as shards and appends do).
fn plus_file(base: Option<&Manifest>, id: &str, file: &str) -> Manifest {
    let mut tables = base.map(|m| m.tables.clone()).unwrap_or_default();
    tables
        .entry("events".to_string())
        .or_default()
        .push(file.to_string());
    Manifest {
        format: runlog::commit::MANIFEST_FORMAT.into(),
        ingest_id: id.into(),
        created_at: String::new(),
        tables,
        summary: serde_json::Value::Null,
        shards: None,
        inputs: Default::default(),
        buckets: 0,
        bucket_files: Default::default(),
        bucket_counts: Default::default(),
        round: None,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// Writer A reads the latest version and builds on it; meanwhile writer B commits. A's
/// put-if-absent is refused, A re-reads, rebuilds on B's version and lands after it.
pub(crate) fn two_writers_race(root: &Root) {
    let rt = rt();
    let mut builds = 0;
    let a = rt
        .block_on(log::commit(root, "a", &[], |cur| {
            builds += 1;
            if builds == 1 {
                let b = runlog::objstore::block_on(log::commit(root, "b", &[], |cur| {
                    Ok(plus_file(cur, "b", "events/b.parquet"))
                }))
                .unwrap();
                assert_eq!((b.version, b.rebased), (1, 0));
            }
            Ok(plus_file(cur, "a", "events/a.parquet"))
        }))
        .unwrap();
    assert_eq!(builds, 2, "A rebuilt on B's version");
    assert_eq!((a.version, a.rebased), (2, 1));
    let (n, latest) = rt.block_on(log::latest(root)).unwrap().unwrap();
    assert_eq!(n, 2);
    assert_eq!(latest.ingest_id, "a");
    assert_eq!(
        latest.tables["events"],
        ["events/b.parquet", "events/a.parquet"],
        "B's entry was kept, A's added"
    );
    assert_eq!(rt.block_on(log::versions(root)).unwrap(), [1, 2]);
}

fn two_writers_racing_on_an_in_memory_store_one_wins_the_other_rebases() {
    two_writers_race(&Root::in_memory("race"));
}

fn two_writers_racing_on_a_local_folder_one_wins_the_other_rebases() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::local(&dir.path().join("wh")).unwrap();
    two_writers_race(&root);
    assert!(dir
        .path()
        .join("wh/_log/00000000000000000002.json")
        .is_file());
}

fn eight_concurrent_writers_all_land_one_version_each() {
    let dir = tempfile::tempdir().unwrap();
    for root in [
        Root::in_memory("eight"),
        Root::local(&dir.path().join("wh")).unwrap(),
    ] {
        let root = Arc::new(root);
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let root = root.clone();
                std::thread::spawn(move || {
                    let file = format!("events/w{i}.parquet");
                    runlog::objstore::block_on(log::commit(&root, &format!("w{i}"), &[], |cur| {
                        Ok(plus_file(cur, &format!("w{i}"), &file))
                    }))
                    .unwrap()
                    .version
                })
            })
            .collect();
        let mut versions: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        versions.sort_unstable();
        assert_eq!(versions, (1..=8).collect::<Vec<_>>(), "{}", root.url);
        let latest = rt().block_on(log::latest(&root)).unwrap().unwrap().1;
        let mut files = latest.tables["events"].clone();
        files.sort();
        let want: Vec<String> = (0..8).map(|i| format!("events/w{i}.parquet")).collect();
        assert_eq!(files, want, "no writer's entry was lost");
    }
}

/// A store that takes put-if-absent for a plain overwrite (as some S3 look-alikes do).
#[derive(Debug)]
struct IgnoresPutIfAbsent(InMemory);

impl std::fmt::Display for IgnoresPutIfAbsent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IgnoresPutIfAbsent")
    }
}

#[async_trait::async_trait]
impl ObjectStore for IgnoresPutIfAbsent {
    async fn put_opts(
        &self,
        location: &ObjPath,
        payload: PutPayload,
        mut opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        if opts.mode == PutMode::Create {
            opts.mode = PutMode::Overwrite;
        }
        self.0.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &ObjPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.0.put_multipart_opts(location, opts).await
    }
    async fn get_opts(
        &self,
        location: &ObjPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.0.get_opts(location, options).await
    }
    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<'static, object_store::Result<ObjPath>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<ObjPath>> {
        self.0.delete_stream(locations)
    }
    fn list(
        &self,
        prefix: Option<&ObjPath>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.0.list(prefix)
    }
    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjPath>,
    ) -> object_store::Result<ListResult> {
        self.0.list_with_delimiter(prefix).await
    }
    async fn copy_opts(
        &self,
        from: &ObjPath,
        to: &ObjPath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.0.copy_opts(from, to, options).await
    }
}

fn a_store_that_ignores_put_if_absent_is_refused_before_any_version() {
    let root = Root::with_store(
        Arc::new(IgnoresPutIfAbsent(InMemory::new())),
        "memory://lax/wh",
    )
    .unwrap();
    let err = rt()
        .block_on(log::commit(&root, "x", &[], |cur| {
            Ok(plus_file(cur, "x", "events/x.parquet"))
        }))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("does not refuse a second put-if-absent"),
        "{err}"
    );
    assert_eq!(
        rt().block_on(log::versions(&root)).unwrap(),
        Vec::<u64>::new()
    );
    // The same commit on a store that refuses it goes through.
    let strict = Root::in_memory("strict");
    rt().block_on(log::commit(&strict, "x", &[], |cur| {
        Ok(plus_file(cur, "x", "events/x.parquet"))
    }))
    .unwrap();
}

fn a_commit_naming_a_missing_file_is_refused() {
    let root = Root::in_memory("missing");
    let err = rt()
        .block_on(log::commit(
            &root,
            "x",
            &["events/nope.parquet".into()],
            |cur| Ok(plus_file(cur, "x", "events/nope.parquet")),
        ))
        .unwrap_err()
        .to_string();
    assert!(err.contains("events/nope.parquet vanished"), "{err}");
    assert!(rt().block_on(log::latest(&root)).unwrap().is_none());
}

fn count_events(ctx: &datafusion::prelude::SessionContext) -> Result<i64, String> {
    let (_, b) = rt()
        .block_on(runlog::query::run_sql(
            ctx,
            "SELECT count(*) AS n FROM events",
        ))
        .map_err(|e| e.to_string())?;
    use datafusion::arrow::array::AsArray;
    Ok(b[0]
        .column(0)
        .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
        .value(0))
}

fn a_query_racing_a_garbage_collection_never_reads_fewer_rows() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let small = dir.path().join("small.jsonl");
    std::fs::write(&big, good_log(50)).unwrap();
    std::fs::write(&small, good_log(3)).unwrap();
    let wh = dir.path().join("wh");
    let w = wh.to_str().unwrap();
    assert!(runlog(&["ingest", big.to_str().unwrap(), "-w", w, "-q"])
        .status
        .success());
    // A query planned over version 1...
    let ctx = runlog::query::context_from_warehouse(&wh).unwrap();
    assert_eq!(count_events(&ctx), Ok(250));
    // ...while other ingests replace everything and collect garbage by the defaults.
    for _ in 0..3 {
        let o = runlog(&["ingest", small.to_str().unwrap(), "-w", w, "-q"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(count_events(&ctx), Ok(250), "version 1's files were kept");
    let latest = runlog::query::context_from_warehouse(&wh).unwrap();
    assert_eq!(count_events(&latest), Ok(15));
    // The control: a collection that keeps one version and no retention takes version 1's
    // files from under the query, which then does not read its 250 rows.
    let o = runlog(&[
        "ingest",
        small.to_str().unwrap(),
        "-w",
        w,
        "-q",
        "--keep-versions",
        "1",
        "--retention",
        "0s",
    ]);
    assert!(o.status.success());
    assert_ne!(count_events(&ctx), Ok(250));
    assert_ne!(count_events(&latest), Ok(15), "version 4's files went too");
    let now = runlog::query::context_from_warehouse(&wh).unwrap();
    assert_eq!(count_events(&now), Ok(15), "the latest version is whole");
    let files_now: usize = runlog::commit::read_manifest(&wh)
        .unwrap()
        .tables
        .values()
        .map(Vec::len)
        .sum();
    assert_eq!(crate::shards::parquet_files_on_disk(&wh), files_now);
}

fn garbage_collection_keeps_the_last_k_versions_and_young_files() {
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<PathBuf> = (0..4)
        .map(|i| {
            let p = dir.path().join(format!("l{i}.jsonl"));
            std::fs::write(&p, good_log(2 + i)).unwrap();
            p
        })
        .collect();
    let wh = dir.path().join("wh");
    let w = wh.to_str().unwrap();
    let files_of = |v: &Path| -> std::collections::BTreeSet<String> {
        let m: Manifest = serde_json::from_slice(&std::fs::read(v).unwrap()).unwrap();
        m.tables.into_values().flatten().collect()
    };
    for (i, l) in logs.iter().enumerate() {
        // Young files stay whatever K is.
        let o = runlog(&[
            "ingest",
            l.to_str().unwrap(),
            "-w",
            w,
            "-q",
            "--keep-versions",
            "1",
        ]);
        assert!(
            o.status.success(),
            "{i}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let version = |n: u64| wh.join(log::version_name(n));
    let all: std::collections::BTreeSet<String> =
        (1..=4).flat_map(|n| files_of(&version(n))).collect();
    assert_eq!(
        crate::shards::parquet_files_on_disk(&wh),
        all.len(),
        "every version's files are young"
    );
    // Keep two versions, no retention: versions 4 and 5's files stay, the others go.
    let o = runlog(&[
        "ingest",
        logs[0].to_str().unwrap(),
        "-w",
        w,
        "-q",
        "--keep-versions",
        "2",
        "--retention",
        "0s",
    ]);
    assert!(o.status.success());
    let kept: std::collections::BTreeSet<String> = [4, 5]
        .into_iter()
        .flat_map(|n| files_of(&version(n)))
        .collect();
    assert_eq!(crate::shards::parquet_files_on_disk(&wh), kept.len());
    for f in &kept {
        assert!(wh.join(f).is_file(), "{f}");
    }
    // Versions themselves are never removed.
    assert_eq!(
        rt().block_on(log::versions(&Root::local(&wh).unwrap()))
            .unwrap(),
        [1, 2, 3, 4, 5]
    );
}

fn a_warehouse_written_before_the_log_is_read_as_version_0_and_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let logp = dir.path().join("a.jsonl");
    std::fs::write(&logp, good_log(4)).unwrap();
    let wh = dir.path().join("wh");
    let w = wh.to_str().unwrap();
    assert!(runlog(&["ingest", logp.to_str().unwrap(), "-w", w, "-q"])
        .status
        .success());
    // Make it an old warehouse: its one version becomes `_manifest.json`.
    std::fs::rename(wh.join(log::version_name(1)), wh.join("_manifest.json")).unwrap();
    std::fs::remove_dir_all(wh.join("_log")).unwrap();
    let before = runlog(&[
        "query",
        "-w",
        w,
        "--format",
        "csv",
        "SELECT count(*) FROM events",
    ]);
    assert!(
        before.status.success(),
        "{}",
        String::from_utf8_lossy(&before.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&before.stdout).lines().nth(1),
        Some("20")
    );
    let root = Root::local(&wh).unwrap();
    assert_eq!(rt().block_on(log::versions(&root)).unwrap(), [0]);
    // The next commit is version 1; once version 0 is out of the window, it goes.
    let o = runlog(&[
        "ingest",
        logp.to_str().unwrap(),
        "-w",
        w,
        "-q",
        "--keep-versions",
        "1",
        "--retention",
        "0s",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rt().block_on(log::versions(&root)).unwrap(), [1]);
    assert!(!wh.join("_manifest.json").exists());
}

trials! {
    a_refused_ingest_leaves_the_warehouse_as_it_was_in_every_mode,
    the_spill_folder_of_a_killed_ingest_is_removed_by_the_next_ingest,
    two_processes_racing_for_the_lock_never_both_hold_it,
    two_writers_racing_on_an_in_memory_store_one_wins_the_other_rebases,
    two_writers_racing_on_a_local_folder_one_wins_the_other_rebases,
    eight_concurrent_writers_all_land_one_version_each,
    a_store_that_ignores_put_if_absent_is_refused_before_any_version,
    a_commit_naming_a_missing_file_is_refused,
    a_query_racing_a_garbage_collection_never_reads_fewer_rows,
    garbage_collection_keeps_the_last_k_versions_and_young_files,
    a_warehouse_written_before_the_log_is_read_as_version_0_and_migrates,
    ; ignored: lock_racer
}
