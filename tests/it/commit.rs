//! The commit protocol end to end: a refused ingest leaves the warehouse byte for byte as
//! it was in every mode; the spill folder of a killed ingest is collected by the next one;
//! two processes racing for the warehouse lock never both hold it.

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

#[test]
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

#[test]
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
#[test]
#[ignore = "a child process of two_processes_racing_for_the_lock_never_both_hold_it"]
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
            Err(runlog::Error::Warehouse { .. }) => {
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

#[test]
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
