//! `reduce::needs` against the reducer: for every column it lists, reading only the events
//! of its kinds (`IngestOptions::keep`) gives exactly the column a full read gives, on every
//! golden case, on generated logs with anomalies in every layout, on random agents with
//! anomalies, and on lines of other types that conflict with kept events; read in memory
//! and through spill partitions.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use runlog_core::event::KindSet;
use runlog_core::ingest::{ingest_paths, IngestOptions};
use runlog_core::reduce::needs::column_kinds;
use runlog_core::reduce_all;

use super::common::repo;

/// The columns of each table `needs` may list.
const COLUMNS: &[(&str, &[&str])] = &[
    (
        "intervals",
        &[
            "",
            "root",
            "open_seq",
            "close_seq",
            "opened_at",
            "closed_at",
            "status",
            "finish_reason",
            "finish_class",
            "protocol_error",
            "message_id",
            "joined_messages",
            "turns",
            "model_calls",
            "errors",
            "tool_calls",
            "input_tokens",
            "output_tokens",
            "busy",
            "conflicts",
            "seq_gaps",
            "inferred",
        ],
    ),
    ("errors", &[""]),
    ("tool_calls", &[""]),
    ("callbacks", &[""]),
    ("turns", &[""]),
    ("runs", &[""]),
    ("agents", &[""]),
];

/// The rows of `table` with only the columns whose kinds lie within `kinds`, as text, sorted.
fn rows(d: &runlog_core::Derived, table: &str, kinds: KindSet) -> Vec<String> {
    let within = |c: &str| column_kinds(table, c).is_some_and(|k| k.union(kinds) == kinds);
    let mut out: Vec<String> = match table {
        "intervals" => d
            .intervals
            .iter()
            .map(|r| {
                let cols: [(&str, String); 21] = [
                    ("root", format!("{:?}", r.root)),
                    ("open_seq", format!("{:?}", r.open_seq)),
                    ("close_seq", format!("{:?}", r.close_seq)),
                    ("opened_at", format!("{:?}", r.opened_at)),
                    ("closed_at", format!("{:?}", r.closed_at)),
                    ("status", r.status.to_string()),
                    ("finish_reason", format!("{:?}", r.finish_reason)),
                    ("finish_class", format!("{:?}", r.finish_class)),
                    ("protocol_error", format!("{:?}", r.protocol_error)),
                    ("message_id", format!("{:?}", r.message_id)),
                    ("joined_messages", format!("{:?}", r.joined_messages)),
                    ("turns", format!("{:?}", r.turns)),
                    ("model_calls", format!("{:?}", r.model_calls)),
                    ("errors", format!("{:?}", r.errors)),
                    ("tool_calls", format!("{:?}", r.tool_calls)),
                    ("input_tokens", format!("{:?}", r.input_tokens)),
                    ("output_tokens", format!("{:?}", r.output_tokens)),
                    ("busy", format!("{:?}", r.busy)),
                    ("conflicts", format!("{:?}", r.conflicts)),
                    ("seq_gaps", format!("{:?}", r.seq_gaps)),
                    ("inferred", format!("{:?}", r.inferred)),
                ];
                cols.iter()
                    .filter(|(c, _)| within(c))
                    .map(|(c, v)| format!("{c}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect(),
        "errors" => d.errors.iter().map(|r| format!("{r:?}")).collect(),
        "tool_calls" => d.tool_calls.iter().map(|r| format!("{r:?}")).collect(),
        "callbacks" => d.callbacks.iter().map(|r| format!("{r:?}")).collect(),
        other => panic!("no rows for {other}"),
    };
    out.sort();
    out
}

/// Reads `paths` whole and under every set of kinds `needs` names, and compares each
/// table's columns of those kinds. Returns how many sets were checked.
fn agree(what: &str, paths: &[PathBuf], base: &IngestOptions) -> usize {
    let whole = reduce_all(&ingest_paths(paths, base).expect("reads"));
    let mut sets: BTreeSet<(&str, u32)> = BTreeSet::new();
    let mut checked = 0;
    for &(table, cols) in COLUMNS {
        for c in cols {
            let Some(kinds) = column_kinds(table, c) else {
                continue;
            };
            let bits = kinds.kinds().fold(0u32, |b, k| b | 1 << k as u32);
            if !sets.insert((table, bits)) {
                continue;
            }
            let opts = IngestOptions {
                keep: Some(kinds),
                ..base.clone()
            };
            let some = reduce_all(&ingest_paths(paths, &opts).expect("reads"));
            let spilled = spilled(paths, &opts, 3);
            let a = rows(&whole, table, kinds);
            for (how, d) in [("in memory", &some), ("spilled", &spilled)] {
                let b = rows(d, table, kinds);
                if a != b {
                    let diff = a.iter().zip(&b).find(|(x, y)| x != y);
                    panic!(
                        "{what}: {table} under {kinds:?}: {} rows read whole, {} {how}; \
                         first difference {diff:?}",
                        a.len(),
                        b.len()
                    );
                }
            }
            checked += 1;
        }
    }
    checked
}

/// `paths` read through `partitions` spill partitions, every partition's agents reduced.
fn spilled(paths: &[PathBuf], opts: &IngestOptions, partitions: usize) -> runlog_core::Derived {
    let dir = tempfile::tempdir().unwrap();
    let agents = std::sync::Mutex::new(Vec::new());
    let totals = runlog_core::ingest::spill::ingest_partitioned::<runlog_core::Error>(
        paths,
        opts,
        &dir.path().join("spill"),
        partitions,
        |p| {
            agents.lock().unwrap().extend(p.agents);
            Ok(())
        },
    )
    .expect("reads");
    let mut agents = agents.into_inner().unwrap();
    agents.sort_by(|a, b| a.root.cmp(&b.root));
    reduce_all(&runlog_core::Ingested { agents, ..totals })
}

/// Every golden case's inputs.
#[test]
fn kept_kinds_give_the_same_columns_on_golden_cases() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/cases"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() > 50);
    for dir in cases {
        let inputs: Vec<PathBuf> = if dir.join("input.paths").is_file() {
            std::fs::read_to_string(dir.join("input.paths"))
                .unwrap()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| dir.join(l))
                .collect()
        } else if dir.join("input").is_dir() {
            vec![dir.join("input")]
        } else {
            vec![dir.join("input.jsonl")]
        };
        let mut opts = IngestOptions::default();
        if let Ok(f) = std::fs::read_to_string(dir.join("input.format")) {
            opts.format = f.trim().parse().unwrap();
        }
        agree(&dir.display().to_string(), &inputs, &opts);
    }
}

/// The real logs of every format (`tests/samples`): their importers leave out the
/// payloads of the kinds not kept (`import::Payloads`), and the columns read are those of
/// a whole read.
#[test]
fn kept_kinds_give_the_same_columns_on_real_samples() {
    let samples = repo().join("tests/samples");
    let checked = agree("tests/samples", &[samples], &IngestOptions::default());
    assert!(checked > 5, "{checked} sets of kinds checked");
}

/// Generated logs with anomalies (duplicates, bad lines, truncated agents, malformed turn
/// ends), in every layout and both mixes, read whole and in small pieces.
#[test]
fn kept_kinds_give_the_same_columns_on_generated_logs() {
    let dir = tempfile::tempdir().unwrap();
    for (i, layout) in runlog_gen::Layout::ALL.into_iter().enumerate() {
        for mix in [runlog_gen::Mix::Deltas, runlog_gen::Mix::Persisted] {
            let out = dir.path().join(format!("{}-{mix:?}", layout.name()));
            let opts = runlog_gen::GenOptions {
                agents: 200,
                seed: 7 + i as u64,
                files: 3,
                anomalies: 0.1,
                layout,
                mix,
            };
            runlog_gen::write(&opts, &out).unwrap();
            for split in [0, 1 << 14] {
                let base = IngestOptions {
                    split_bytes: split,
                    ..Default::default()
                };
                let n = agree(
                    &out.display().to_string(),
                    std::slice::from_ref(&out),
                    &base,
                );
                assert!(n >= 5);
            }
        }
    }
}

fn line(seq: u64, kind: &str, data: &str) -> String {
    format!(
        r#"{{"seq":{seq},"ts":"2026-01-01T00:00:{:02}Z","root":"r","session":"r","turn":"t","type":"{kind}","data":{data}}}"#,
        seq % 60
    )
}

fn write(dir: &Path, name: &str, lines: &[String]) {
    std::fs::write(dir.join(name), lines.join("\n") + "\n").unwrap();
}

/// A line of a type not kept that shares its root and `seq` with a kept event: the one
/// read first is kept (docs/semantics.md §1), whether the other type's line is valid or
/// not, and whichever file it is in.
#[test]
fn lines_of_other_types_settle_conflicts_as_a_full_read_does() {
    let end = |seq| line(seq, "turn/end", r#"{"reason":{"kind":"completed"}}"#);
    let end_cut = |seq| line(seq, "turn/end", r#"{"reason":{"kind":"cut_short"}}"#);
    let delta = |seq| line(seq, "text/delta", r#"{"text":"hi"}"#);
    let open = vec![
        line(1, "inbox/receipt", r#"{"message_id":"m"}"#),
        line(2, "turn/start", "{}"),
    ];
    let close = line(9, "agent/idle", "{}");
    // Each case: file a's lines after the opening, file b's lines. The turn end at seq 5,
    // when kept, is the interval's last (`completed`); when displaced, the one at seq 4
    // (`cut_short`) is.
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        // A delta read before the turn end at seq 5: the delta is kept, the end rejected.
        (vec![end_cut(4), delta(5)], vec![end(5)]),
        // The end read first: kept.
        (vec![end_cut(4), end(5)], vec![delta(5)]),
        // A delta whose payload is not JSON, read first: a reject, so the end is kept.
        (
            vec![
                end_cut(4),
                line(5, "text/delta", r#"{"text":"unterminated}"#),
            ],
            vec![end(5)],
        ),
        // A delta with a payload that breaks after a valid start: a reject too.
        (
            vec![end_cut(4), line(5, "text/delta", r#"{"a":1,}"#)],
            vec![end(5)],
        ),
        // Two deltas, an invalid one first, then a valid one: the valid one still wins.
        (
            vec![end_cut(4), line(5, "text/delta", "{,}"), delta(5)],
            vec![end(5)],
        ),
        // Duplicated turn ends and a delta between them in input order.
        (vec![end_cut(4), end(5)], vec![delta(5), end(5)]),
        // In one file: the delta first, then the end.
        (vec![end_cut(4), delta(5), end(5)], vec![]),
    ];
    for (k, (a, b)) in cases.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = open.clone();
        first.extend(a);
        let mut second = b;
        second.push(close.clone());
        write(dir.path(), "a.jsonl", &first);
        write(dir.path(), "b.jsonl", &second);
        let paths = [dir.path().to_path_buf()];
        let n = agree(&format!("case {k}"), &paths, &IngestOptions::default());
        assert!(n >= 5);
        // The cases tell both outcomes apart: the full read's finish is the expected one.
        let whole = reduce_all(&ingest_paths(&paths, &IngestOptions::default()).unwrap());
        let finish = whole.intervals[0]
            .finish_reason
            .as_deref()
            .map(str::to_string);
        let displaced = [0, 4, 6].contains(&k);
        let expected = if displaced { "cut_short" } else { "completed" };
        assert_eq!(finish.as_deref(), Some(expected), "case {k}");
    }
}
