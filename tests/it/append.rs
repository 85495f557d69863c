//! `runlog ingest --append`: for random splits of generated and real logs into A and B
//! (with a file of A that grows and one whose earlier content changes), `ingest A` then
//! `ingest --append B` gives the tables of `ingest A∪B`, row for row; a second append of
//! the same files writes and commits nothing; `kill -9` during an append leaves the
//! previous version readable and a re-run converges; concurrent appenders all land.
//! The same with `--append B --shard I/N`: N shards of B, one after another in a random
//! order or all at once, equal `ingest A∪B` once all have landed; an open round refuses
//! other appends; N must divide the 64 buckets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use runlog_gen::{GenOptions, Layout, Mix};

use super::shards::{dump, ok, runlog, stderr};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `runlog ingest [--append] FILES -w WH`; the output.
fn ingest(files: &[PathBuf], wh: &Path, append: bool) -> Output {
    let mut args = vec!["ingest".to_string()];
    if append {
        args.push("--append".into());
    }
    args.extend(files.iter().map(|f| s(f).to_string()));
    args.extend(["-w".into(), s(wh).into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(runlog(&args))
}

fn versions(wh: &Path) -> usize {
    std::fs::read_dir(wh.join("_log"))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

/// A small seeded generator (splits must differ by seed, and repeat).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn assert_same(a: &Path, b: &Path, what: &str) {
    let (da, db) = (dump(a), dump(b));
    for t in runlog::store::TABLES.iter().map(|t| t.name()) {
        assert!(
            da[t] == db[t],
            "{what}: table {t} differs\n--- append ---\n{}\n--- full ---\n{}",
            da[t],
            db[t]
        );
    }
}

/// Lines of a file, each with its newline.
fn lines_of(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect()
}

/// How B is appended: one `--append`, N shards of it (`--shard I/N`) one after another in
/// a random order, or N shards at once (processes).
#[derive(Debug, Clone, Copy)]
enum How {
    Single,
    Shards(u32),
    Concurrent(u32),
}

/// `runlog ingest --append FILES -w WH --shard I/N EXTRA...` (not checked).
fn shard_append(files: &[PathBuf], wh: &Path, i: u32, n: u32, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runlog"));
    c.arg("ingest")
        .arg("--append")
        .args(files)
        .arg("-w")
        .arg(wh);
    c.arg("--shard").arg(format!("{i}/{n}")).args(extra);
    c
}

/// Appends B as `how` says, checking the round as it goes; the outputs, concatenated.
fn append_b(b: &[PathBuf], wh: &Path, how: How, rng: &mut Lcg) -> String {
    let n = match how {
        How::Single => return stderr(&ingest(b, wh, true)),
        How::Shards(n) | How::Concurrent(n) => n,
    };
    let before = runlog::commit::read_manifest(wh).unwrap().inputs;
    let mut out = String::new();
    if let How::Concurrent(n) = how {
        let children: Vec<_> = (0..n)
            .map(|i| {
                shard_append(b, wh, i, n, &[])
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            out.push_str(&stderr(&ok(c.wait_with_output().unwrap())));
        }
        assert!(
            out.contains(&format!("{n} of {n} shards landed (complete")),
            "{out}"
        );
    } else {
        let mut order: Vec<u32> = (0..n).collect();
        for k in (1..order.len()).rev() {
            order.swap(k, rng.next() as usize % (k + 1));
        }
        for (k, &i) in order.iter().enumerate() {
            // GC keeps only the latest version's files at once: not those of the round's
            // base, which the shards after this one plan on.
            let tight = ["--keep-versions", "1", "--retention", "0s"];
            let o = stderr(&ok(shard_append(b, wh, i, n, &tight).output().unwrap()));
            out.push_str(&o);
            let m = runlog::commit::read_manifest(wh).unwrap();
            let landed = format!("{} of {n} shards landed", k + 1);
            assert!(o.contains(&landed), "{order:?}: {o}");
            if k + 1 < order.len() {
                assert_eq!(
                    m.inputs, before,
                    "the index waits for the round's last shard"
                );
                assert!(m.round.is_some());
                // A landed shard run again: nothing done, nothing committed.
                let vs = versions(wh);
                let again = stderr(&ok(shard_append(b, wh, i, n, &[]).output().unwrap()));
                assert!(
                    again.contains("had landed in this round already"),
                    "{again}"
                );
                assert_eq!(
                    versions(wh),
                    vs,
                    "a re-run of a landed shard commits nothing"
                );
            } else {
                assert!(o.contains("(complete"), "{o}");
            }
        }
    }
    let m = runlog::commit::read_manifest(wh).unwrap();
    assert!(m.round.is_none(), "the round closed");
    // A shard of the closed round run again: nothing new.
    let again = stderr(&ok(shard_append(b, wh, n - 1, n, &[]).output().unwrap()));
    assert!(again.contains("0 new files, 0 new lines"), "{again}");
    out
}

/// One split: the files of `logs` (all of them, final contents) into A and B at random;
/// one file of A is ingested with only its first lines (it grows after), one with a line
/// changed (it changes after). Checks `A` then `--append B` (and the grown and changed
/// files) against a full ingest of everything, starting from a full ingest of A (`full_a`)
/// or from an append into a missing warehouse, B appended as `how` says; returns the
/// append's output.
fn check_split(logs: &[PathBuf], seed: u64, full_a: bool, mutate: bool, how: How) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Lcg(seed);
    // Copies of the logs, so that files can be cut and changed.
    let mut files = Vec::new();
    for (k, f) in logs.iter().enumerate() {
        let to = dir.path().join(format!(
            "f{k:02}-{}",
            f.file_name().unwrap().to_string_lossy()
        ));
        std::fs::copy(f, &to).unwrap();
        files.push(to);
    }
    let (mut a, mut b): (Vec<PathBuf>, Vec<PathBuf>) = (Vec::new(), Vec::new());
    for f in &files {
        if rng.next() % 2 == 0 {
            a.push(f.clone());
        } else {
            b.push(f.clone());
        }
    }
    if a.is_empty() {
        a.push(b.pop().unwrap());
    }
    // The grown and the changed file, among A's plain files.
    let plain: Vec<PathBuf> = a
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
        .cloned()
        .collect();
    let mut later: Vec<(PathBuf, String)> = Vec::new();
    if mutate && !plain.is_empty() {
        let grown = &plain[rng.next() as usize % plain.len()];
        let all = lines_of(grown);
        let cut = all.len() * 3 / 5;
        later.push((grown.clone(), all.concat()));
        std::fs::write(grown, all[..cut].concat()).unwrap();
        if plain.len() > 1 {
            let changed = plain.iter().find(|f| *f != grown).unwrap();
            let mut all = lines_of(changed);
            later.push((changed.clone(), all.concat()));
            let k = rng.next() as usize % all.len().max(1);
            all[k] = "{\"not\": \"the final line\"}\n".into();
            all.remove((k + 1) % all.len());
            std::fs::write(changed, all.concat()).unwrap();
        }
    }
    let wh = dir.path().join("wh");
    ingest(&a, &wh, !full_a);
    for (f, text) in &later {
        std::fs::write(f, text).unwrap();
        b.push(f.clone());
    }
    let out = append_b(&b, &wh, how, &mut rng);
    if later.len() == 2 {
        assert!(out.contains("1 grown, 1 changed"), "{out}");
    }
    let full = dir.path().join("full");
    ingest(&files, &full, false);
    let what = format!("seed {seed}, full A {full_a}, {how:?}, A {a:?}, B {b:?}");
    assert_same(&wh, &full, &what);
    // Again: nothing new, nothing committed.
    let before = versions(&wh);
    let again = stderr(&ingest(&b, &wh, true));
    assert!(again.contains("0 new files, 0 new lines"), "{again}");
    assert_eq!(versions(&wh), before, "{what}: a re-append commits nothing");
    out
}

fn generated(dir: &Path, layout: Layout, anomalies: f64, seed: u64) -> Vec<PathBuf> {
    let opts = GenOptions {
        agents: 60,
        seed,
        files: 6,
        anomalies,
        layout,
        mix: Mix::Deltas,
    };
    generated_with(&dir.join(format!("gen-{seed}")), &opts)
}

fn appends_of_generated_logs_equal_a_full_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let mut incremental = 0;
    for (k, layout) in Layout::ALL.into_iter().enumerate() {
        for (anomalies, seed) in [(0.0, 11 + k as u64), (0.05, 21 + k as u64)] {
            let logs = generated(dir.path(), layout, anomalies, seed);
            for full_a in [false, true] {
                let out = check_split(&logs, seed * 7 + full_a as u64, full_a, true, How::Single);
                if full_a {
                    assert!(out.contains("read every input again"), "{out}");
                } else if !out.contains("read every input again") {
                    incremental += 1;
                }
            }
        }
    }
    // Clean logs append bucket by bucket, a changed file included.
    assert!(incremental >= 3, "{incremental} appends were incremental");
}

fn appends_after_the_files_before_them_stay_incremental_with_anomalies() {
    // Duplicates and conflicts in the warehouse: new files sorting after the old ones lose
    // to the kept events, which the warehouse can tell without the lost lines.
    let dir = tempfile::tempdir().unwrap();
    for layout in [Layout::Rotated, Layout::Scattered] {
        let logs = generated(dir.path(), layout, 0.05, 5);
        let wh = dir.path().join(format!("wh-{layout:?}"));
        let (a, b) = logs.split_at(3);
        ingest(a, &wh, true);
        let out = stderr(&ingest(b, &wh, true));
        assert!(!out.contains("read every input again"), "{out}");
        assert!(out.contains("appended: 3 new files"), "{out}");
        let full = dir.path().join(format!("full-{layout:?}"));
        ingest(&logs, &full, false);
        assert_same(&wh, &full, &format!("{layout:?}"));
    }
}

fn appends_of_the_sample_logs_equal_a_full_ingest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs");
    let logs = runlog_core::ingest::discover(&[root]).unwrap().0;
    for seed in [1, 2, 3] {
        check_split(&logs, seed, seed == 3, seed == 2, How::Single);
    }
}

fn summary_json_counts_the_new_files_and_lines_and_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let logs = generated(dir.path(), Layout::Rotated, 0.05, 3);
    let wh = dir.path().join("wh");
    ingest(&logs[..2], &wh, true);
    let json = dir.path().join("s.json");
    ok(runlog(&[
        "ingest",
        "--append",
        s(&logs[2]),
        s(&logs[3]),
        "-w",
        s(&wh),
        "--summary-json",
        s(&json),
    ]));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let lines: u64 = logs[2..4].iter().map(|f| lines_of(f).len() as u64).sum();
    assert_eq!(v["new_files"], 2);
    assert_eq!(v["new_lines"], lines);
    assert_eq!(v["files"], 4);
    assert_eq!(v["adds_up"], true);
    let again = runlog(&[
        "ingest",
        "--append",
        s(&logs[2]),
        "-w",
        s(&wh),
        "--summary-json",
        "-",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&ok(again).stdout).unwrap();
    assert_eq!(
        (v["new_files"].as_u64(), v["new_lines"].as_u64()),
        (Some(0), Some(0))
    );
}

fn count_events(wh: &Path) -> Option<u64> {
    let ctx = runlog::query::context_from_warehouse(wh).ok()?;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_, b) = rt
        .block_on(runlog::query::run_sql(&ctx, "SELECT count(*) FROM events"))
        .ok()?;
    use datafusion::arrow::array::AsArray;
    Some(
        b[0].column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .value(0) as u64,
    )
}

/// A log generated with `opts` into `dir`: its files, in the order ingest reads them.
fn generated_with(dir: &Path, opts: &GenOptions) -> Vec<PathBuf> {
    runlog_gen::write(opts, dir).unwrap();
    runlog_core::ingest::discover(&[dir.to_path_buf()])
        .unwrap()
        .0
}

/// The setting of the `kill -9` tests: a rotated log of 400 agents in 4 files under
/// `dir/gen`, its first file appended into `dir/wh`, all of it ingested into `dir/full`: the
/// log's files, the appended and the full warehouse, and the events before and after the
/// rest.
fn kill_setup(dir: &Path, seed: u64) -> (Vec<PathBuf>, PathBuf, PathBuf, u64, u64) {
    let opts = GenOptions {
        agents: 400,
        seed,
        files: 4,
        layout: Layout::Rotated,
        ..Default::default()
    };
    let logs = generated_with(&dir.join("gen"), &opts);
    let wh = dir.join("wh");
    ingest(&logs[..1], &wh, true);
    let first = count_events(&wh).unwrap();
    let full = dir.join("full");
    ingest(&logs, &full, false);
    let total = count_events(&full).unwrap();
    (logs, wh, full, first, total)
}

fn kill_9_during_an_append_leaves_the_previous_version_and_a_rerun_converges() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, wh, full, first, total) = kill_setup(dir.path(), 4);
    let mut args: Vec<&str> = vec!["ingest", "--append", "-q", "-w", s(&wh)];
    args.extend(logs[1..].iter().map(|p| s(p)));
    for delay_ms in [5u64, 30, 80, 150, 300, 600] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args(&args)
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let n = count_events(&wh).expect("the warehouse stays readable");
        if status.success() {
            assert_eq!(n, total, "a finished append is whole");
        } else {
            assert!(
                n == first || n == total,
                "killed after {delay_ms} ms: {n} events"
            );
        }
    }
    // A re-run converges on the tables of a full ingest.
    ok(runlog(&args));
    assert_same(&wh, &full, "after kills");
}

fn eight_concurrent_appenders_all_land_one_version_each() {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        agents: 80,
        seed: 9,
        files: 9,
        anomalies: 0.02,
        layout: Layout::Scattered,
        ..Default::default()
    };
    let logs = generated_with(&dir.path().join("gen"), &opts);
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    // On the in-memory store, and on a local folder (whose tables are compared).
    let memory = runlog::objstore::Root::in_memory("append-race");
    let local = dir.path().join("wh");
    let local_root = runlog::objstore::Root::open(&local).unwrap();
    for root in [&memory, &local_root] {
        let io = runlog_core::IngestOptions::default();
        let gc = runlog::commit::GcPolicy::default();
        runlog::append::append(
            root,
            &runlog::inputs::list(&logs[..1]).unwrap(),
            &io,
            gc,
            None,
            None,
        )
        .unwrap();
        std::thread::scope(|sc| {
            for f in &logs[1..] {
                let io = io.clone();
                sc.spawn(move || {
                    let a = runlog::append::append(
                        root,
                        &runlog::inputs::list(std::slice::from_ref(f)).unwrap(),
                        &io,
                        gc,
                        None,
                        None,
                    )
                    .unwrap();
                    assert_eq!(a.new_files, 1);
                    assert!(a.manifest.is_some());
                });
            }
        });
        let vs = runlog::objstore::block_on(runlog::commit::log::versions(root)).unwrap();
        assert_eq!(vs, (1..=9).collect::<Vec<u64>>(), "one version each");
        let m = runlog::commit::read_latest(root).unwrap();
        assert_eq!(m.inputs.len(), 9, "every appender's file is in the index");
        let kept: u64 = m.summary["kept"].as_u64().unwrap();
        let full_kept = runlog::commit::read_manifest(&full).unwrap().summary["kept"]
            .as_u64()
            .unwrap();
        assert_eq!(kept, full_kept, "nothing lost");
    }
    assert_same(&local, &full, "eight appenders");
}

fn many_appends_compact_each_buckets_events_files() {
    // Scattered files: every file continues the agents of the files before.
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        agents: 12,
        seed: 2,
        files: 12,
        layout: Layout::Scattered,
        ..Default::default()
    };
    let logs = generated_with(&dir.path().join("gen"), &opts);
    let wh = dir.path().join("wh");
    let counts = |wh: &Path| -> BTreeMap<u32, usize> {
        let m = runlog::commit::read_manifest(wh).unwrap();
        m.bucket_files
            .get("events")
            .into_iter()
            .flatten()
            .map(|(b, f)| (*b, f.len()))
            .collect()
    };
    let mut before = BTreeMap::new();
    let mut compactions = 0;
    for f in &logs {
        let out = stderr(&ingest(std::slice::from_ref(f), &wh, true));
        assert!(!out.contains("read every input again"), "{out}");
        // Each bucket gains one events file at most, or is compacted into one (its rows
        // fit in one part): a compaction that left several files would be redone by the
        // next append, and the one after.
        let now = counts(&wh);
        for (b, &n) in &now {
            let was = before.get(b).copied().unwrap_or(0);
            assert!(
                n <= was + 1 || n == 1,
                "bucket {b}: {was} -> {n} events files"
            );
            if n < was {
                assert_eq!(n, 1, "bucket {b} compacted into {n} files");
                compactions += 1;
            }
        }
        before = now;
    }
    assert!(compactions > 0, "the appends compact some bucket");
    let m = runlog::commit::read_manifest(&wh).unwrap();
    let most = m.bucket_files["events"]
        .values()
        .map(Vec::len)
        .max()
        .unwrap();
    assert!(
        most <= runlog::append::MAX_EVENTS_FILES,
        "{most} events files in a bucket"
    );
    assert!(most > 1, "appends add events files");
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    assert_same(&wh, &full, "many appends");
}

/// Derived files of a bucket named in the version at `wh`: table -> bucket -> files.
fn derived_files(wh: &Path) -> BTreeMap<String, BTreeMap<u32, Vec<String>>> {
    let mut m = runlog::commit::read_manifest(wh).unwrap().bucket_files;
    m.remove("events");
    m
}

fn appends_of_new_agents_keep_the_old_derived_files_and_compaction_bounds_them() {
    // By agent: each file holds its own agents, so each append touches new agents only;
    // with ~3 agents per bucket and file, most buckets gain files on every append.
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        agents: 2400,
        seed: 5,
        files: 12,
        layout: Layout::ByAgent,
        mix: Mix::Persisted,
        ..Default::default()
    };
    let logs = generated_with(&dir.path().join("gen"), &opts);
    let wh = dir.path().join("wh");
    let max = runlog::append::MAX_DERIVED_FILES;
    let mut before: BTreeMap<String, BTreeMap<u32, Vec<String>>> = BTreeMap::new();
    let (mut kept_all, mut compacted) = (0, 0);
    for f in &logs {
        let out = stderr(&ingest(std::slice::from_ref(f), &wh, true));
        assert!(!out.contains("read every input again"), "{out}");
        let now = derived_files(&wh);
        for (table, by_b) in &now {
            for (b, files) in by_b {
                assert!(
                    files.len() <= max,
                    "{table} bucket {b}: {} files",
                    files.len()
                );
            }
        }
        for (table, by_b) in &before {
            for (b, old) in by_b {
                let new = &now[table][b];
                if old.len() < max {
                    // Room for the new agents' file: every old file is still named.
                    for f in old {
                        assert!(new.contains(f), "{table} bucket {b}: {f} was rewritten");
                    }
                    kept_all += 1;
                } else {
                    // Full: the smallest were merged, and the largest file stays.
                    assert_eq!(new.len(), max, "{table} bucket {b}");
                    assert!(
                        old.iter().any(|f| new.contains(f)),
                        "{table} bucket {b}: every file rewritten"
                    );
                    compacted += 1;
                }
            }
        }
        before = now;
    }
    assert!(
        kept_all > 0 && compacted > 0,
        "{kept_all} kept, {compacted} compacted"
    );
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    assert_same(&wh, &full, "appends of new agents");
}

fn tables_without_rows_are_readable_after_an_append() {
    // Two log events: no intervals, turns, tool calls, callbacks or runs.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.jsonl");
    let line = |seq: u64| {
        format!(
            "{{\"seq\":{seq},\"ts\":\"2026-11-03T10:00:0{seq}Z\",\"root\":\"r\",\"session\":\"r\",\"type\":\"log\",\"data\":{{\"msg\":\"m{seq}\"}}}}\n"
        )
    };
    std::fs::write(&f, line(1)).unwrap();
    let wh = dir.path().join("wh");
    ingest(std::slice::from_ref(&f), &wh, true);
    std::fs::write(&f, line(1) + &line(2)).unwrap();
    let out = stderr(&ingest(std::slice::from_ref(&f), &wh, true));
    assert!(out.contains("1 grown"), "{out}");
    let full = dir.path().join("full");
    ingest(std::slice::from_ref(&f), &full, false);
    assert_same(&wh, &full, "two log events");
}

fn an_append_onto_a_warehouse_of_an_older_release_reads_everything_once() {
    // An older release's version: no fingerprint index, no buckets.
    let dir = tempfile::tempdir().unwrap();
    let logs = generated(dir.path(), Layout::Scattered, 0.05, 31);
    let wh = dir.path().join("wh");
    ingest(&logs[..4], &wh, false);
    let latest = std::fs::read_dir(wh.join("_log"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .max()
        .unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&latest).unwrap()).unwrap();
    assert!(v.as_object_mut().unwrap().remove("inputs").is_some());
    std::fs::write(&latest, serde_json::to_vec(&v).unwrap()).unwrap();
    assert!(runlog::commit::read_manifest(&wh)
        .unwrap()
        .inputs
        .is_empty());
    let out = stderr(&ingest(&logs[4..], &wh, true));
    assert!(out.contains("not stored in buckets yet"), "{out}");
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    assert_same(&wh, &full, "older release");
    // Bucketed now: the next append is incremental, and an unchanged one a no-op.
    let again = stderr(&ingest(&logs[..4], &wh, true));
    assert!(again.contains("0 new files, 0 new lines"), "{again}");
}

fn sharded_appends_of_generated_logs_equal_a_full_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let hows = [
        How::Shards(2),
        How::Concurrent(4),
        How::Shards(4),
        How::Concurrent(2),
    ];
    let (mut k, mut incremental) = (0, 0);
    for (l, layout) in Layout::ALL.into_iter().enumerate() {
        for (anomalies, seed) in [(0.0, 41 + l as u64), (0.05, 51 + l as u64)] {
            let logs = generated(dir.path(), layout, anomalies, seed);
            for _ in 0..2 {
                let (how, full_a) = (hows[k % hows.len()], k % 3 == 2);
                k += 1;
                let out = check_split(&logs, seed * 5 + k as u64, full_a, true, how);
                if full_a {
                    assert!(out.contains("read every input again"), "{out}");
                } else if !out.contains("read every input again") {
                    incremental += 1;
                }
            }
        }
    }
    assert!(
        incremental >= 2,
        "{incremental} sharded appends were incremental"
    );
}

fn sharded_appends_of_the_sample_logs_equal_a_full_ingest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs");
    let logs = runlog_core::ingest::discover(&[root]).unwrap().0;
    check_split(&logs, 4, false, true, How::Shards(2));
    check_split(&logs, 5, true, false, How::Concurrent(4));
}

fn eight_concurrent_shards_on_the_in_memory_store_all_land_one_version_each() {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        agents: 80,
        seed: 19,
        files: 6,
        anomalies: 0.02,
        layout: Layout::Scattered,
        ..Default::default()
    };
    let logs = generated_with(&dir.path().join("gen"), &opts);
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    let full_m = runlog::commit::read_manifest(&full).unwrap();
    let memory = runlog::objstore::Root::in_memory("shard-append-race");
    let local = dir.path().join("wh");
    let local_root = runlog::objstore::Root::open(&local).unwrap();
    for root in [&memory, &local_root] {
        let io = runlog_core::IngestOptions::default();
        let gc = runlog::commit::GcPolicy::default();
        runlog::append::append(
            root,
            &runlog::inputs::list(&logs[..2]).unwrap(),
            &io,
            gc,
            None,
            None,
        )
        .unwrap();
        std::thread::scope(|sc| {
            for index in 0..8 {
                let io = io.clone();
                let b = &logs[2..];
                sc.spawn(move || {
                    let shard = runlog_core::shard::Shard { index, count: 8 };
                    let a = runlog::append::append(
                        root,
                        &runlog::inputs::list(b).unwrap(),
                        &io,
                        gc,
                        Some(shard),
                        None,
                    )
                    .unwrap();
                    assert!(a.manifest.is_some(), "shard {index} landed");
                    assert_eq!(a.round.unwrap().ran, vec![index]);
                });
            }
        });
        let vs = runlog::objstore::block_on(runlog::commit::log::versions(root)).unwrap();
        assert_eq!(vs, (1..=9).collect::<Vec<u64>>(), "one version each");
        let m = runlog::commit::read_latest(root).unwrap();
        assert!(m.round.is_none(), "the round closed");
        assert_eq!(m.inputs.len(), logs.len(), "the index holds every input");
        for k in [
            "kept",
            "duplicates",
            "rejects",
            "agents",
            "intervals",
            "lines_read",
        ] {
            assert_eq!(m.summary[k], full_m.summary[k], "{k}: nothing lost");
        }
    }
    assert_same(&local, &full, "eight shards at once");
}

fn an_open_round_refuses_other_appends_and_a_plain_append_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let logs = generated(dir.path(), Layout::Rotated, 0.05, 61);
    let (a, rest) = logs.split_at(2);
    let (b, c) = rest.split_at(2);
    let wh = dir.path().join("wh");
    ingest(a, &wh, true);
    let o = stderr(&ok(shard_append(b, &wh, 0, 2, &[]).output().unwrap()));
    assert!(o.contains("1 of 2 shards landed (missing 1"), "{o}");
    let vs = versions(&wh);
    let refused = |o: Output, what: &str| {
        assert!(!o.status.success(), "{what} was not refused");
        let e = stderr(&o);
        assert!(
            e.contains("missing 1") && e.contains("nothing was written"),
            "{what}: {e}"
        );
        e
    };
    let e = refused(
        shard_append(c, &wh, 0, 2, &[]).output().unwrap(),
        "a second round",
    );
    assert!(e.contains("not the round's"), "{e}");
    let mut plain = vec!["ingest", "--append", "-w", s(&wh)];
    plain.extend(c.iter().map(|p| s(p)));
    refused(runlog(&plain), "an append of other inputs");
    let e = refused(
        shard_append(b, &wh, 1, 4, &[]).output().unwrap(),
        "shards of 4",
    );
    assert!(e.contains("another round"), "{e}");
    assert_eq!(versions(&wh), vs, "refusals commit nothing");
    // The same inputs without --shard: the missing shards, here.
    let o = stderr(&ingest(b, &wh, true));
    assert!(o.contains("2 of 2 shards landed (complete"), "{o}");
    ok(runlog(&plain));
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    assert_same(
        &wh,
        &full,
        "a round completed without --shard, then an append",
    );
}

fn shards_of_a_first_append_create_the_warehouse() {
    let dir = tempfile::tempdir().unwrap();
    let logs = generated(dir.path(), Layout::ByAgent, 0.05, 71);
    let wh = dir.path().join("wh");
    for i in [3, 1, 0, 2] {
        ok(shard_append(&logs, &wh, i, 4, &[]).output().unwrap());
    }
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    assert_same(&wh, &full, "four shards of a first append");
    let single = dir.path().join("single");
    ingest(&logs, &single, true);
    assert_eq!(
        runlog::commit::read_manifest(&wh).unwrap().inputs,
        runlog::commit::read_manifest(&single).unwrap().inputs,
        "the index of one append"
    );
}

fn shard_counts_that_do_not_divide_the_buckets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let logs = generated(dir.path(), Layout::ByAgent, 0.0, 81);
    let wh = dir.path().join("wh");
    let o = shard_append(&logs, &wh, 0, 3, &[]).output().unwrap();
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("must divide") && e.contains("64"), "{e}");
    assert!(!runlog::commit::is_warehouse(&wh), "nothing written");
}

fn tables_without_rows_are_readable_while_and_after_a_sharded_append() {
    // One agent of log events only: most tables have no rows, and one shard no agent.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.jsonl");
    let line = |seq: u64| {
        format!(
            "{{\"seq\":{seq},\"ts\":\"2026-11-03T10:00:0{seq}Z\",\"root\":\"r\",\"session\":\"r\",\"type\":\"log\",\"data\":{{\"msg\":\"m{seq}\"}}}}\n"
        )
    };
    std::fs::write(&f, line(1)).unwrap();
    let wh = dir.path().join("wh");
    ingest(std::slice::from_ref(&f), &wh, true);
    std::fs::write(&f, line(1) + &line(2) + &line(3)).unwrap();
    let own = runlog_core::shard::Shard::of("r", 2);
    for i in [1 - own, own] {
        let o = stderr(&ok(shard_append(std::slice::from_ref(&f), &wh, i, 2, &[])
            .output()
            .unwrap()));
        assert!(o.contains("1 grown"), "{o}");
        // Partial, and readable: the agent's events are those of before until its shard lands.
        let events = count_events(&wh).expect("readable while the round is open");
        assert_eq!(events, if i == own { 3 } else { 1 }, "after shard {i}");
    }
    let full = dir.path().join("full");
    ingest(std::slice::from_ref(&f), &full, false);
    assert_same(&wh, &full, "log events only, two shards");
}

fn kill_9_during_a_shards_append_leaves_a_readable_warehouse_and_reruns_converge() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, wh, full, first, total) = kill_setup(dir.path(), 14);
    for (k, delay_ms) in [5u64, 40, 120, 300, 700].into_iter().enumerate() {
        let i = k as u32 % 2;
        let mut child = shard_append(&logs[1..], &wh, i, 2, &["-q"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let n = count_events(&wh).expect("the warehouse stays readable");
        assert!(
            first <= n && n <= total,
            "killed after {delay_ms} ms: {n} events"
        );
    }
    // Both shards run again (a landed one does nothing): the tables of a full ingest.
    for i in [1, 0] {
        ok(shard_append(&logs[1..], &wh, i, 2, &[]).output().unwrap());
    }
    assert!(runlog::commit::read_manifest(&wh).unwrap().round.is_none());
    assert_same(&wh, &full, "after kills");
}

/// `runlog ingest --append FILES -w WH --summary-json -`: the JSON summary and the output.
fn append_json(files: &[PathBuf], wh: &Path) -> (serde_json::Value, String) {
    let mut args = vec!["ingest", "--append", "-w", s(wh), "--summary-json", "-"];
    args.extend(files.iter().map(|p| s(p)));
    let o = ok(runlog(&args));
    (serde_json::from_slice(&o.stdout).unwrap(), stderr(&o))
}

/// A log of 1,000 agents with the usual anomalies in 5 files: 3 appended, one of them with
/// only its first lines (the rest of the stream is added later: agents split over it and
/// the next file run on across the growth, and their new lines come before duplicates
/// kept from the next file, which they win over); then the 3 and 2 new files appended.
fn a_grown_file_and_new_files_append_only_the_new_lines() {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        agents: 1000,
        seed: 7,
        files: 5,
        anomalies: 0.05,
        layout: Layout::ByAgent,
        ..Default::default()
    };
    let logs = generated_with(&dir.path().join("gen"), &opts);
    assert_eq!(logs.len(), 5);
    let full = dir.path().join("full");
    ingest(&logs, &full, false);
    // Kept events of unchanged files that became duplicates of a grown file's new lines.
    let mut won_over = 0;
    for grown in [0, 1] {
        let wh = dir.path().join(format!("wh-{grown}"));
        let all = lines_of(&logs[grown]);
        let cut = all.len() * 3 / 5;
        std::fs::write(&logs[grown], all[..cut].concat()).unwrap();
        ingest(&logs[..3], &wh, true);
        std::fs::write(&logs[grown], all.concat()).unwrap();
        let before = file_duplicates(&wh);
        let (v, out) = append_json(&logs, &wh);
        let after = file_duplicates(&wh);
        for (k, f) in logs[..3].iter().enumerate().filter(|(k, _)| *k != grown) {
            won_over += after[s(f)] - before[s(f)];
            assert!(after[s(f)] >= before[s(f)], "file {k}");
        }
        let new: u64 = (all.len() - cut) as u64
            + logs[3..]
                .iter()
                .map(|f| lines_of(f).len() as u64)
                .sum::<u64>();
        assert_eq!(v["fallback"], serde_json::Value::Null, "{out}");
        assert_eq!(v["new_lines"].as_u64(), Some(new), "{out}");
        assert_eq!(v["new_files"], 2);
        assert!(out.contains("1 grown"), "{out}");
        assert_eq!(v["adds_up"], true);
        assert_same(&wh, &full, &format!("file {grown} grown"));
    }
    assert!(won_over > 0, "no new line won over a kept event");
}

/// The `duplicates` of each file of the warehouse at `wh`, by name.
fn file_duplicates(wh: &Path) -> BTreeMap<String, u64> {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::{DataType, Int64Type};
    let ctx = runlog::query::context_from_warehouse(wh).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sql = "SELECT CAST(file AS VARCHAR), CAST(duplicates AS BIGINT) FROM files";
    let (_, batches) = rt.block_on(runlog::query::run_sql(&ctx, sql)).unwrap();
    let mut out = BTreeMap::new();
    for b in batches {
        let files = datafusion::arrow::compute::cast(b.column(0), &DataType::Utf8).unwrap();
        let files = files.as_string::<i32>();
        let dups = b.column(1).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            out.insert(files.value(i).to_string(), dups.value(i) as u64);
        }
    }
    out
}

/// Where the warehouse cannot tell what a full ingest would keep, the append reads
/// everything again, and the output and `--summary-json` say why, naming the file.
fn a_fallback_to_a_full_read_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        agents: 400,
        seed: 17,
        files: 5,
        anomalies: 0.05,
        layout: Layout::Rotated,
        ..Default::default()
    };
    let logs = generated_with(&dir.path().join("gen"), &opts);
    let wh = dir.path().join("wh");
    ingest(&logs[..3], &wh, true);
    let m = runlog::commit::read_manifest(&wh).unwrap();
    assert!(m.summary["duplicates"].as_u64().unwrap() > 0, "losers held");
    // A line in the middle of a file ingested before changes.
    let mut lines = lines_of(&logs[1]);
    let k = lines.len() / 2;
    lines[k] = "{\"not\": \"the line read before\"}\n".into();
    std::fs::write(&logs[1], lines.concat()).unwrap();
    let (v, out) = append_json(&logs[..4], &wh);
    let why = v["fallback"].as_str().unwrap_or_default().to_string();
    let name = s(&logs[1]);
    assert!(
        why.contains("a file changed") && why.contains(name),
        "{why}\n{out}"
    );
    assert!(
        out.contains("fell back to a full read") && out.contains(name),
        "{out}"
    );
    let total: u64 = logs[..4].iter().map(|f| lines_of(f).len() as u64).sum();
    assert_eq!(
        v["new_lines"].as_u64(),
        Some(total),
        "everything read again"
    );
    let full = dir.path().join("full");
    ingest(&logs[..4], &full, false);
    assert_same(&wh, &full, "a changed file");
}

trials! {
    appends_of_generated_logs_equal_a_full_ingest,
    appends_after_the_files_before_them_stay_incremental_with_anomalies,
    appends_of_the_sample_logs_equal_a_full_ingest,
    summary_json_counts_the_new_files_and_lines_and_adds_up,
    kill_9_during_an_append_leaves_the_previous_version_and_a_rerun_converges,
    eight_concurrent_appenders_all_land_one_version_each,
    many_appends_compact_each_buckets_events_files,
    appends_of_new_agents_keep_the_old_derived_files_and_compaction_bounds_them,
    tables_without_rows_are_readable_after_an_append,
    an_append_onto_a_warehouse_of_an_older_release_reads_everything_once,
    sharded_appends_of_generated_logs_equal_a_full_ingest,
    sharded_appends_of_the_sample_logs_equal_a_full_ingest,
    eight_concurrent_shards_on_the_in_memory_store_all_land_one_version_each,
    an_open_round_refuses_other_appends_and_a_plain_append_completes_it,
    shards_of_a_first_append_create_the_warehouse,
    shard_counts_that_do_not_divide_the_buckets_are_refused,
    tables_without_rows_are_readable_while_and_after_a_sharded_append,
    kill_9_during_a_shards_append_leaves_a_readable_warehouse_and_reruns_converge,
    a_grown_file_and_new_files_append_only_the_new_lines,
    a_fallback_to_a_full_read_says_why,
}
