//! The `runlog` binary end to end: ingest into a warehouse, query every table in every
//! format, exit codes and error messages, replay from files and from a warehouse, follow.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn runlog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(args)
        .output()
        .expect("run runlog")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const LOG: &str = r#"{"seq":1,"ts":"2026-11-03T10:00:00.000Z","root":"s1","session":"s1","type":"session/start","data":{"parent":null}}
{"seq":2,"ts":"2026-11-03T10:00:00.010Z","root":"s1","session":"s1","type":"inbox/receipt","data":{"message_id":"m1","kind":"prompt"}}
{"seq":3,"ts":"2026-11-03T10:00:00.020Z","root":"s1","session":"s1","turn":"t1","type":"turn/start"}
{"seq":4,"ts":"2026-11-03T10:00:01.500Z","root":"s1","session":"s1","turn":"t1","type":"model/end","data":{"error":{"code":"completion_unavailable","message":"503","retryable":true,"details":{"http_status":503}}}}
{"seq":5,"ts":"2026-11-03T10:00:03.000Z","root":"s1","session":"s1","turn":"t1","type":"text/delta","data":{"text":"Done."}}
{"seq":6,"ts":"2026-11-03T10:00:03.100Z","root":"s1","session":"s1","turn":"t1","type":"model/end","data":{"finish_reason":"stop","usage":{"input_tokens":900,"output_tokens":12,"total_tokens":912}}}
{"seq":7,"ts":"2026-11-03T10:00:03.200Z","root":"s1","session":"s1","turn":"t1","type":"turn/end","data":{"reason":{"kind":"completed"},"text":"Done."}}
{"seq":8,"ts":"2026-11-03T10:00:03.300Z","root":"s1","session":"s1","type":"agent/idle"}
this line is not json
"#;

fn setup(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(logs.join(format!("{name}.jsonl")), LOG).unwrap();
    std::fs::write(logs.join("notes.txt"), "not a log").unwrap();
    let wh = dir.path().join("wh");
    (dir, logs, wh)
}

/// The tables of docs/semantics.md §8, their minimum columns and the Arrow types they must have.
const TABLES: &[(&str, &[(&str, &str)])] = &[
    (
        "events",
        &[
            ("root", "Utf8"),
            ("session", "Utf8"),
            ("turn", "Utf8"),
            ("seq", "Int64"),
            ("ts", "Timestamp(µs, \"UTC\")"),
            ("type", "Utf8"),
            ("voice", "Utf8"),
            ("file", "Utf8"),
            ("line", "Int64"),
            ("data", "Utf8"),
        ],
    ),
    (
        "intervals",
        &[
            ("root", "Utf8"),
            ("open_seq", "Int64"),
            ("close_seq", "Int64"),
            ("opened_at", "Timestamp(µs, \"UTC\")"),
            ("closed_at", "Timestamp(µs, \"UTC\")"),
            ("status", "Utf8"),
            ("finish_reason", "Utf8"),
            ("protocol_error", "Int64"),
            ("message_id", "Utf8"),
            ("joined_messages", "Int64"),
            ("turns", "Int64"),
            ("model_calls", "Int64"),
            ("errors", "Int64"),
            ("tool_calls", "Int64"),
            ("input_tokens", "Int64"),
            ("output_tokens", "Int64"),
            ("busy", "Int64"),
            ("conflicts", "Int64"),
            ("seq_gaps", "Int64"),
            ("inferred", "Boolean"),
            ("finish_class", "Utf8"),
        ],
    ),
    (
        "turns",
        &[
            ("root", "Utf8"),
            ("session", "Utf8"),
            ("turn", "Utf8"),
            ("is_root", "Boolean"),
            ("interval_open_seq", "Int64"),
            ("start_seq", "Int64"),
            ("end_seq", "Int64"),
            ("state", "Utf8"),
            ("stop_reason", "Utf8"),
            ("cause", "Utf8"),
            ("outcome", "Utf8"),
            ("error_code", "Utf8"),
            ("text_len", "Int64"),
            ("tool_calls", "Int64"),
            ("model_calls", "Int64"),
            ("input_tokens", "Int64"),
            ("output_tokens", "Int64"),
            ("protocol_error", "Int64"),
            ("inferred", "Boolean"),
            ("finish_class", "Utf8"),
        ],
    ),
    (
        "errors",
        &[
            ("root", "Utf8"),
            ("session", "Utf8"),
            ("turn", "Utf8"),
            ("seq", "Int64"),
            ("ts", "Timestamp(µs, \"UTC\")"),
            ("source", "Utf8"),
            ("code", "Utf8"),
            ("message", "Utf8"),
            ("retryable", "Boolean"),
            ("http_status", "Int64"),
            ("details_reason", "Utf8"),
            ("retryable_expected", "Boolean"),
            ("retryable_mismatch", "Boolean"),
            ("status_consistent", "Boolean"),
            ("retried", "Boolean"),
            ("recovered", "Boolean"),
        ],
    ),
    (
        "tool_calls",
        &[
            ("root", "Utf8"),
            ("session", "Utf8"),
            ("turn", "Utf8"),
            ("call_id", "Utf8"),
            ("seq", "Int64"),
            ("name", "Utf8"),
            ("arguments", "Utf8"),
            ("status", "Utf8"),
            ("detail", "Utf8"),
        ],
    ),
    (
        "callbacks",
        &[
            ("root", "Utf8"),
            ("session", "Utf8"),
            ("turn", "Utf8"),
            ("callback_id", "Utf8"),
            ("kind", "Utf8"),
            ("title", "Utf8"),
            ("open_seq", "Int64"),
            ("close_seq", "Int64"),
            ("closed_by", "Utf8"),
        ],
    ),
    (
        "runs",
        &[
            ("root", "Utf8"),
            ("run_id", "Utf8"),
            ("attempt", "Int64"),
            ("start_seq", "Int64"),
            ("settle_seq", "Int64"),
            ("settle", "Utf8"),
            ("output_status", "Utf8"),
            ("wait_for_kind", "Utf8"),
            ("assistant_text_len", "Int64"),
            ("provisional_tail", "Boolean"),
            ("error_code", "Utf8"),
            ("assistant_deltas", "Int64"),
            ("reasoning_deltas", "Int64"),
            ("progress_events", "Int64"),
            ("tool_events", "Int64"),
            ("log_events", "Int64"),
            ("interaction_events", "Int64"),
        ],
    ),
    (
        "rejects",
        &[
            ("file", "Utf8"),
            ("line", "Int64"),
            ("reason", "Utf8"),
            ("excerpt", "Utf8"),
        ],
    ),
];

fn every_interface_table_and_column_has_its_type() {
    for (table, cols) in TABLES {
        let schema = runlog::store::schema(table.parse().unwrap());
        for (name, ty) in *cols {
            let field = schema
                .field_with_name(name)
                .unwrap_or_else(|_| panic!("{table}.{name} missing"));
            assert_eq!(&field.data_type().to_string(), ty, "{table}.{name}");
        }
    }
}

fn ingest_then_query_every_table_in_every_format() {
    let (_d, logs, wh) = setup("a");
    let o = runlog(&[
        "ingest",
        logs.to_str().unwrap(),
        "--warehouse",
        wh.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("lines read 9  = kept 8 + duplicates 0 + rejects 1"),
        "{err}"
    );
    assert!(err.contains("1 skipped by name"), "{err}");
    assert!(err.contains("agents 1  intervals 1"), "{err}");
    for (table, cols) in TABLES {
        let sql = format!("SELECT * FROM {table}");
        let csv = runlog(&["query", "-w", wh.to_str().unwrap(), &sql, "--format", "csv"]);
        assert!(csv.status.success(), "{table}: {}", stderr(&csv));
        let out = stdout(&csv);
        let header: Vec<&str> = out.lines().next().unwrap().split(',').collect();
        let want: Vec<&str> = cols.iter().map(|c| c.0).collect();
        assert_eq!(&header[..want.len()], &want[..], "{table} csv header");
        let json = runlog(&[
            "query",
            "-w",
            wh.to_str().unwrap(),
            &sql,
            "--format",
            "json",
        ]);
        assert!(json.status.success(), "{table}: {}", stderr(&json));
        for line in stdout(&json).lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for c in &want {
                assert!(v.get(c).is_some(), "{table} json lacks {c}: {line}");
            }
        }
        let table_out = runlog(&["query", "-w", wh.to_str().unwrap(), &sql]);
        assert!(table_out.status.success());
        assert!(stdout(&table_out).contains(want[0]), "{table} table output");
    }
    let o = runlog(&[
        "query",
        "-w",
        wh.to_str().unwrap(),
        "SELECT status, finish_reason, model_calls, errors, input_tokens FROM intervals",
        "-f",
        "csv",
    ]);
    assert_eq!(
        stdout(&o),
        "status,finish_reason,model_calls,errors,input_tokens\nsettled,completed,2,1,900\n"
    );
    let o = runlog(&[
        "query",
        "-w",
        wh.to_str().unwrap(),
        "SELECT file, line, reason FROM rejects",
        "-f",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(v["file"].as_str().unwrap().ends_with("a.jsonl"));
    assert_eq!(v["line"], 9);
    assert!(v["reason"].as_str().unwrap().starts_with("not valid JSON"));
}

fn query_from_raw_files_and_from_sql_file() {
    let (d, logs, _wh) = setup("b");
    let sql_file = d.path().join("q.sql");
    std::fs::write(
        &sql_file,
        "-- count events\nSELECT count(*) AS n FROM events",
    )
    .unwrap();
    let o = runlog(&[
        "query",
        logs.to_str().unwrap(),
        sql_file.to_str().unwrap(),
        "-f",
        "csv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n8\n");
}

fn large_logs_are_queried_through_spill_partitions_with_the_same_answers() {
    // `--spill-partitions P` takes the way logs of 256 MiB or more take by default: read
    // through spill partitions under $TMPDIR into the tables and columns a question reads
    // (from only the kinds of events it depends on: the finish reasons, the errors; from
    // every event: the counts, the report), or, under a time window, into a temporary
    // warehouse queried there.
    let d = tempfile::tempdir().unwrap();
    let logs = d.path().join("logs");
    let o = runlog(&[
        "gen",
        "--agents",
        "300",
        "--seed",
        "5",
        "--files",
        "3",
        "--layout",
        "scattered",
        "--mix",
        "persisted",
        "--anomalies",
        "0.05",
        "--out",
        logs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args(args)
            .env("TMPDIR", &tmp)
            .output()
            .expect("run runlog");
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let wh = d.path().join("wh");
    run(&[
        "ingest",
        logs.to_str().unwrap(),
        "-w",
        wh.to_str().unwrap(),
        "-q",
    ]);
    let counts = "SELECT (SELECT count(*) FROM events) AS events, \
        (SELECT count(*) FROM intervals) AS intervals, (SELECT count(*) FROM turns) AS turns, \
        (SELECT count(*) FROM errors) AS errors, (SELECT count(*) FROM tool_calls) AS calls, \
        (SELECT count(*) FROM rejects) AS rejects, (SELECT sum(kept) FROM files) AS kept";
    let finish = concat!(env!("CARGO_MANIFEST_DIR"), "/queries/finish_reasons.sql");
    let errors = "SELECT e.code, i.status, count(*) AS n FROM errors e \
        JOIN intervals i ON e.root = i.root GROUP BY 1, 2 ORDER BY 1, 2";
    for sql in [counts, finish, errors] {
        let stored = run(&["query", "-w", wh.to_str().unwrap(), sql, "-f", "csv"]);
        let from_logs = |p: &str| {
            run(&[
                "query",
                logs.to_str().unwrap(),
                sql,
                "-f",
                "csv",
                "--spill-partitions",
                p,
            ])
        };
        assert_eq!(from_logs("0"), stored, "in memory: {sql}");
        assert_eq!(from_logs("3"), stored, "spilled: {sql}");
    }
    // Not an empty answer agreeing with itself: 300 agents' events, intervals and turns.
    let stored = run(&["query", "-w", wh.to_str().unwrap(), counts, "-f", "csv"]);
    let row: Vec<u64> = stored
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        row[0] > 300 * 10 && row[1] >= 300 && row[2] >= 300,
        "{stored}"
    );
    let report = |extra: &[&str]| {
        let mut args = vec!["report", logs.to_str().unwrap(), "--format", "json"];
        args.extend(extra);
        run(&args)
    };
    assert_eq!(
        report(&["--spill-partitions", "2"]),
        report(&["--spill-partitions", "0"])
    );
    let window = ["--since", "2026-11-02", "--until", "2026-11-05"];
    let windowed = report(&[&window[..], &["--spill-partitions", "2"]].concat());
    assert_eq!(
        windowed,
        report(&[&window[..], &["--spill-partitions", "0"]].concat())
    );
    assert!(windowed.contains("\"window\""), "{windowed}");
    // A replay reads only its agent's lines: the same as from the warehouse of every line,
    // in memory and spilled, for the agents with the most events and with seq gaps.
    let w = wh.to_str().unwrap();
    let mut roots = Vec::new();
    for sql in [
        "SELECT root FROM agents ORDER BY events DESC, root LIMIT 3",
        "SELECT root FROM agents WHERE seq_gaps > 0 ORDER BY root LIMIT 2",
    ] {
        let out = run(&["query", "-w", w, sql, "-f", "csv"]);
        roots.extend(out.lines().skip(1).map(str::to_string));
    }
    roots.sort();
    roots.dedup();
    assert!(roots.len() >= 3, "{roots:?}");
    for r in &roots {
        let stored = run(&["replay", "-w", w, "--root", r]);
        assert!(stored.lines().count() > 3, "{r}: {stored}");
        for p in ["0", "2"] {
            let from_logs = run(&[
                "replay",
                logs.to_str().unwrap(),
                "--root",
                r,
                "--spill-partitions",
                p,
            ]);
            assert_eq!(from_logs, stored, "{r}, --spill-partitions {p}");
        }
    }
    // The temporary warehouses are gone.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    // With a warehouse there is nothing to spill.
    let o = runlog(&[
        "query",
        "-w",
        wh.to_str().unwrap(),
        counts,
        "--spill-partitions",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

fn errors_are_one_line_with_exit_1_and_usage_is_exit_2() {
    let (_d, logs, wh) = setup("c");
    let o = runlog(&["query", logs.to_str().unwrap(), "SELEC nonsense"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    let o = runlog(&["query", "-w", wh.to_str().unwrap(), "SELECT 1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a runlog warehouse"),
        "{}",
        stderr(&o)
    );
    let o = runlog(&["ingest", "/definitely/not/here", "-w", wh.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/definitely/not/here: no such file or folder"));
    let o = runlog(&["query"]);
    assert_eq!(o.status.code(), Some(2));
    let o = runlog(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

fn max_rejects_fails_and_writes_nothing() {
    let (_d, logs, wh) = setup("d");
    let o = runlog(&[
        "ingest",
        logs.to_str().unwrap(),
        "-w",
        wh.to_str().unwrap(),
        "--max-rejects",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("too many rejects: 1 of 9 lines"),
        "{}",
        stderr(&o)
    );
    assert!(!wh.join("_log").exists() && !wh.join("_manifest.json").exists());
    let o = runlog(&[
        "ingest",
        logs.to_str().unwrap(),
        "-w",
        wh.to_str().unwrap(),
        "--max-rejects",
        "20%",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

fn replay_from_files_and_warehouse_agree() {
    let (_d, logs, wh) = setup("e");
    assert!(
        runlog(&["ingest", logs.to_str().unwrap(), "-w", wh.to_str().unwrap()])
            .status
            .success()
    );
    let a = runlog(&["replay", logs.to_str().unwrap(), "--root", "s1"]);
    let b = runlog(&["replay", "-w", wh.to_str().unwrap(), "--root", "s1"]);
    assert!(
        a.status.success() && b.status.success(),
        "{}{}",
        stderr(&a),
        stderr(&b)
    );
    assert_eq!(stdout(&a), stdout(&b));
    // Through a temporary warehouse, the way of logs of 256 MiB or more.
    let c = runlog(&[
        "replay",
        logs.to_str().unwrap(),
        "--root",
        "s1",
        "--spill-partitions",
        "2",
    ]);
    assert_eq!(stdout(&c), stdout(&b), "{}", stderr(&c));
    let lines: Vec<serde_json::Value> = stdout(&a)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[6]["state"]["state"], "Completed");
    assert_eq!(lines[6]["cursor"], "7");
    let snap = runlog(&[
        "replay",
        "-w",
        wh.to_str().unwrap(),
        "--root",
        "s1",
        "--at",
        "5",
    ]);
    let v: serde_json::Value = serde_json::from_str(stdout(&snap).trim()).unwrap();
    assert_eq!(v["state"], "Running");
    assert_eq!(v["text"], "Done.");
    assert_eq!(v["cursor"], "5");
    // A root id that looks like SQL is only ever a value.
    let o = runlog(&[
        "replay",
        "-w",
        wh.to_str().unwrap(),
        "--root",
        "s1' OR '1'='1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no events for root"));
}

fn follow_prints_each_change_as_events_arrive() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["replay", "--follow", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let lines: Vec<&str> = LOG.lines().collect();
    use std::io::BufRead;
    // Each event's line comes out before the next event is written.
    for (i, l) in lines.iter().take(8).enumerate() {
        writeln!(stdin, "{l}").unwrap();
        stdin.flush().unwrap();
        let mut out = String::new();
        reader.read_line(&mut out).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["cursor"], (i + 1).to_string());
    }
    writeln!(stdin, "{}", lines[8]).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:9: not valid JSON"));
}

fn reingest_replaces_and_converges() {
    let (_d, logs, wh) = setup("f");
    for _ in 0..2 {
        assert!(runlog(&[
            "ingest",
            logs.to_str().unwrap(),
            "-w",
            wh.to_str().unwrap(),
            "-q"
        ])
        .status
        .success());
    }
    let o = runlog(&[
        "query",
        "-w",
        wh.to_str().unwrap(),
        "SELECT count(*) AS n FROM events",
        "-f",
        "csv",
    ]);
    assert_eq!(stdout(&o), "n\n8\n");
    let parquet_files = || std::fs::read_dir(wh.join("events")).unwrap().count();
    assert_eq!(
        parquet_files(),
        2,
        "the previous version's files are kept for its readers"
    );
    // Keeping one version with no retention removes the old commits' files at once.
    let o = runlog(&[
        "ingest",
        logs.to_str().unwrap(),
        "-w",
        wh.to_str().unwrap(),
        "-q",
        "--keep-versions",
        "1",
        "--retention",
        "0s",
    ]);
    assert!(o.status.success());
    assert_eq!(parquet_files(), 1, "old commits' files are removed");
    assert!(!Path::new(&wh.join("_lock")).exists());
}

fn bench_times_every_stage_of_the_users_logs() {
    let (_dir, logs, _wh) = setup("bench");
    let o = runlog(&["bench", logs.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("bench --json is JSON");
    // The log's 8 good lines (its bad line is a reject, not an event) of one agent.
    assert_eq!(r["events"], 8);
    assert_eq!(r["agents"], 1);
    let stages: Vec<&str> = r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        ["read+decode", "reduce", "batches + parquet", "end to end"]
    );
    let rss: Vec<Option<u64>> = r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["peak_rss"].as_u64())
        .collect();
    if cfg!(target_os = "linux") {
        // A high-water mark: known on Linux, positive, never falling from stage to stage.
        let rss: Vec<u64> = rss.into_iter().map(|v| v.expect("VmHWM")).collect();
        assert!(rss[0] > 0);
        assert!(rss.windows(2).all(|w| w[0] <= w[1]), "{rss:?}");
    }
}

/// Every command's help is its own: its summary in `runlog --help` is the first line of
/// `runlog CMD --help`, and every example it shows runs `runlog CMD` itself.
fn every_command_has_its_own_help() {
    let top = stdout(&runlog(&["--help"]));
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 8, "{top}");
    for cmd in commands {
        let o = runlog(&[cmd, "--help"]);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", stderr(&o));
        let help = stdout(&o);
        let first = help.lines().next().unwrap_or_default();
        let listed = top
            .lines()
            .find(|l| l.split_whitespace().next() == Some(cmd))
            .unwrap_or_default();
        let words: Vec<&str> = first.split_whitespace().take(4).collect();
        assert!(
            listed.contains(&words.join(" ")),
            "{cmd}: `runlog --help` says {listed:?}, its own help begins {first:?}"
        );
        // The summary: one sentence of its own (two commands' docs run together read as
        // two; a variant without its doc takes its arguments' doc, which starts otherwise).
        let summary: String = help
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            summary.starts_with(|c: char| c.is_ascii_uppercase()),
            "{cmd}: {summary:?}"
        );
        let sentences = summary
            .trim_end_matches('.')
            .split(". ")
            .filter(|s| s.starts_with(|c: char| c.is_ascii_uppercase()))
            .count();
        assert_eq!(sentences, 1, "{cmd}: {summary:?}");
        for example in help.lines().filter_map(|l| l.split("Example: ").nth(1)) {
            let ran = example.split_whitespace().nth(1);
            assert_eq!(
                ran,
                Some(cmd),
                "{cmd}'s help shows another command: {example}"
            );
        }
    }
}

trials! {
    every_command_has_its_own_help,
    every_interface_table_and_column_has_its_type,
    ingest_then_query_every_table_in_every_format,
    query_from_raw_files_and_from_sql_file,
    large_logs_are_queried_through_spill_partitions_with_the_same_answers,
    errors_are_one_line_with_exit_1_and_usage_is_exit_2,
    max_rejects_fails_and_writes_nothing,
    replay_from_files_and_warehouse_agree,
    follow_prints_each_change_as_events_arrive,
    reingest_replaces_and_converges,
    bench_times_every_stage_of_the_users_logs,
}
