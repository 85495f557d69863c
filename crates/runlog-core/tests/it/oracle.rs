//! The reducer checked against a second, deliberately simple implementation of
//! docs/semantics.md §2–§5 (`oracle/model.rs`), written from the spec over plain JSON
//! values, on thousands of generated agents; plus the order independence of ingest and
//! reduce, and replay at every cursor against the log cut at that cursor.
//!
//! Inputs come from two generators: `runlog_gen` (production-like) and the random one in
//! `oracle/randgen.rs` (adversarial: random interleavings of every event type).
//!
//! On a disagreement the test names the root, the table, the row and the differing fields,
//! and writes the first failing agent's events to a JSONL file to replay it.

mod edges;
mod model;
mod randgen;

use std::collections::BTreeMap;
use std::time::Instant;

use rayon::prelude::*;
use serde_json::{json, Value};

use edges::{edge_cases, edge_line};
use model::{Oracle, Tables, TABLES};
use randgen::Rng;
use runlog_core::event::PayloadIndex;
use runlog_core::ingest::{assemble, read_stream, IngestOptions, Ingested};
use runlog_core::reduce::{reduce_agent, Derived, Reducer};
use runlog_core::Event;

// ---------------------------------------------------------------------------------------
// Both sides in comparable form: each row a JSON object, by table.

/// A kept event as the oracle reads it.
fn event_value(e: &Event) -> Value {
    json!({
        "seq": e.seq,
        "ts": e.ts,
        "root": e.root.as_str(),
        "session": e.session.as_str(),
        "turn": e.turn.as_deref(),
        "type": e.kind.as_str(),
        "data": serde_json::from_str::<Value>(&e.data).expect("kept data is JSON"),
    })
}

fn real_tables(d: &Derived) -> Tables {
    let mut t = Tables::new();
    t.insert(
        "intervals",
        d.intervals
            .iter()
            .map(|r| {
                json!({
                    "root": r.root.as_str(), "open_seq": r.open_seq, "close_seq": r.close_seq,
                    "opened_at": r.opened_at, "closed_at": r.closed_at, "status": r.status,
                    "finish_reason": r.finish_reason, "finish_class": r.finish_class,
                    "protocol_error": r.protocol_error,
                    "message_id": r.message_id, "joined_messages": r.joined_messages,
                    "turns": r.turns, "model_calls": r.model_calls, "errors": r.errors,
                    "tool_calls": r.tool_calls, "input_tokens": r.input_tokens,
                    "output_tokens": r.output_tokens, "busy": r.busy, "conflicts": r.conflicts,
                    "seq_gaps": r.seq_gaps,
                })
            })
            .collect(),
    );
    t.insert(
        "turns",
        d.turns
            .iter()
            .map(|r| {
                json!({
                    "root": r.root.as_str(), "session": r.session.as_str(), "turn": r.turn.as_str(), "is_root": r.is_root,
                    "interval_open_seq": r.interval_open_seq, "start_seq": r.start_seq,
                    "end_seq": r.end_seq, "state": r.state, "stop_reason": r.stop_reason,
                    "cause": r.cause, "outcome": r.outcome, "error_code": r.error_code,
                    "text_len": r.text_len, "tool_calls": r.tool_calls,
                    "model_calls": r.model_calls, "input_tokens": r.input_tokens,
                    "output_tokens": r.output_tokens, "protocol_error": r.protocol_error,
                    "finish_class": r.finish_class,
                })
            })
            .collect(),
    );
    t.insert(
        "errors",
        d.errors
            .iter()
            .map(|r| {
                json!({
                    "root": r.root.as_str(), "session": r.session.as_str(), "turn": r.turn.as_deref(), "seq": r.seq,
                    "ts": r.ts, "source": r.source, "code": r.code, "message": r.message,
                    "retryable": r.retryable, "http_status": r.http_status,
                    "details_reason": r.details_reason,
                    "retryable_expected": r.retryable_expected,
                    "retryable_mismatch": r.retryable_mismatch,
                    "status_consistent": r.status_consistent, "retried": r.retried,
                    "recovered": r.recovered,
                })
            })
            .collect(),
    );
    t.insert(
        "tool_calls",
        d.tool_calls
            .iter()
            .map(|r| {
                // `arguments` is JSON text: compare it as a JSON value.
                let args = match &r.arguments {
                    None => Value::Null,
                    Some(a) => serde_json::from_str(a).expect("arguments are JSON text"),
                };
                json!({
                    "root": r.root.as_str(), "session": r.session.as_str(), "turn": r.turn.as_deref(),
                    "call_id": r.call_id, "seq": r.seq, "name": r.name, "arguments": args,
                    "status": r.status, "detail": r.detail,
                })
            })
            .collect(),
    );
    t.insert(
        "callbacks",
        d.callbacks
            .iter()
            .map(|r| {
                json!({
                    "root": r.root.as_str(), "session": r.session.as_str(), "turn": r.turn.as_deref(),
                    "callback_id": r.callback_id, "kind": r.kind, "title": r.title,
                    "open_seq": r.open_seq, "close_seq": r.close_seq, "closed_by": r.closed_by,
                })
            })
            .collect(),
    );
    t.insert(
        "runs",
        d.runs
            .iter()
            .map(|r| {
                json!({
                    "root": r.root.as_str(), "run_id": r.run_id, "attempt": r.attempt,
                    "start_seq": r.start_seq, "settle_seq": r.settle_seq, "settle": r.settle,
                    "output_status": r.output_status, "wait_for_kind": r.wait_for_kind,
                    "assistant_text_len": r.assistant_text_len,
                    "provisional_tail": r.provisional_tail, "error_code": r.error_code,
                    "assistant_deltas": r.assistant_deltas,
                    "reasoning_deltas": r.reasoning_deltas,
                    "progress_events": r.progress_events, "tool_events": r.tool_events,
                    "log_events": r.log_events, "interaction_events": r.interaction_events,
                })
            })
            .collect(),
    );
    t.insert(
        "agents",
        d.agents
            .iter()
            .map(|r| {
                json!({
                    "root": r.root.as_str(), "events": r.events, "sessions": r.sessions,
                    "first_seq": r.first_seq, "last_seq": r.last_seq, "first_ts": r.first_ts,
                    "last_ts": r.last_ts, "intervals": r.intervals,
                    "stray_idles": r.stray_idles, "seq_gaps": r.seq_gaps,
                })
            })
            .collect(),
    );
    t
}

// ---------------------------------------------------------------------------------------
// Readable diffs

/// What identifies a row within one agent's table (for pairing rows in a diff).
fn row_key(table: &str, row: &Value) -> String {
    let fields: &[&str] = match table {
        "intervals" => &["open_seq"],
        "turns" => &["session", "turn"],
        "errors" | "tool_calls" => &["seq"],
        "callbacks" => &["open_seq"],
        "runs" => &["start_seq"],
        "snapshot" => &["session_id", "turn_id"],
        _ => &["root"],
    };
    fields
        .iter()
        .map(|f| format!("{f}={}", row[*f]))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The differences between two tables of rows (compared as sorted lists), one readable line
/// each: rows paired by key show only the fields that differ.
fn diff_rows(table: &str, reducer: &[Value], oracle: &[Value]) -> Vec<String> {
    let mut a: Vec<String> = reducer.iter().map(Value::to_string).collect();
    let mut b: Vec<String> = oracle.iter().map(Value::to_string).collect();
    a.sort();
    b.sort();
    if a == b {
        return Vec::new();
    }
    let group = |rows: &[Value]| {
        let mut m: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for r in rows {
            m.entry(row_key(table, r)).or_default().push(r.clone());
        }
        m
    };
    let (ga, gb) = (group(reducer), group(oracle));
    let mut keys: Vec<&String> = ga.keys().chain(gb.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for k in keys {
        let empty = Vec::new();
        let ra = ga.get(k).unwrap_or(&empty);
        let rb = gb.get(k).unwrap_or(&empty);
        match (ra.as_slice(), rb.as_slice()) {
            ([x], [y]) => {
                if x != y {
                    let mut names: Vec<&String> = x
                        .as_object()
                        .unwrap()
                        .keys()
                        .chain(y.as_object().unwrap().keys())
                        .collect();
                    names.sort();
                    names.dedup();
                    let fields: Vec<String> = names
                        .into_iter()
                        .filter(|f| x.get(*f) != y.get(*f))
                        .map(|f| {
                            format!(
                                "{f}: reducer={} oracle={}",
                                x.get(f).unwrap_or(&Value::Null),
                                y.get(f).unwrap_or(&Value::Null)
                            )
                        })
                        .collect();
                    out.push(format!("{table} [{k}]: {}", fields.join(", ")));
                }
            }
            _ => {
                let mut sa: Vec<String> = ra.iter().map(Value::to_string).collect();
                let mut sb: Vec<String> = rb.iter().map(Value::to_string).collect();
                sa.sort();
                sb.sort();
                if sa != sb {
                    out.push(format!(
                        "{table} [{k}]: reducer has {} row(s) {:?}, oracle has {} row(s) {:?}",
                        sa.len(),
                        sa,
                        sb.len(),
                        sb
                    ));
                }
            }
        }
    }
    out
}

fn diff_tables(reducer: &Tables, oracle: &Tables) -> Vec<String> {
    let empty = Vec::new();
    TABLES
        .iter()
        .flat_map(|t| {
            diff_rows(
                t,
                reducer.get(t).unwrap_or(&empty),
                oracle.get(t).unwrap_or(&empty),
            )
        })
        .collect()
}

/// Disagreements collected over many agents.
#[derive(Default)]
struct Report {
    agents: usize,
    events: usize,
    rows: usize,
    failed_agents: usize,
    lines: Vec<String>,
    /// The first failing agent's events, written out for replay.
    dumped: Option<String>,
}

impl Report {
    fn add(&mut self, what: &str, root: &str, events: &[Event], problems: Vec<String>) {
        if problems.is_empty() {
            return;
        }
        self.failed_agents += 1;
        let max_lines = std::env::var("ORACLE_MAX_LINES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(30);
        if self.lines.len() < max_lines {
            self.lines.push(format!("root {root:?} ({what}):"));
            self.lines
                .extend(problems.iter().take(8).map(|p| format!("    {p}")));
        }
        if self.dumped.is_none() {
            let path = std::env::temp_dir().join(format!(
                "oracle-{}.jsonl",
                root.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            ));
            let text: String = events
                .iter()
                .map(|e| format!("{}\n", event_value(e)))
                .collect();
            let _ = std::fs::write(&path, text);
            self.dumped = Some(path.display().to_string());
        }
    }

    fn finish(&self, name: &str) {
        eprintln!(
            "{name}: {} agents, {} events, {} rows compared",
            self.agents, self.events, self.rows
        );
        assert!(
            self.failed_agents == 0,
            "{name}: {} of {} agents disagree (first failing agent's events: {})\n{}",
            self.failed_agents,
            self.agents,
            self.dumped.as_deref().unwrap_or("-"),
            self.lines.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------
// Inputs

/// Ingests in-memory files (in this order: the file index is the position).
fn ingest(files: &[Vec<u8>]) -> Ingested {
    let reads = files
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            read_stream(
                i as u32,
                &format!("part-{i:03}.jsonl"),
                bytes.as_slice(),
                &IngestOptions::default(),
            )
            .expect("in-memory read")
        })
        .collect();
    let ing = assemble(reads);
    let t = ing.totals();
    assert_eq!(t.lines, t.kept + t.duplicates + t.rejects, "ingest adds up");
    ing
}

fn join_lines(lines: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Lines of `n` random agents.
fn random_lines(seed: u64, n: usize, anomalies: bool) -> Vec<String> {
    (0..n)
        .flat_map(|i| randgen::agent_lines(seed, i, anomalies))
        .collect()
}

/// Lines of `n` production-like agents from `runlog_gen`.
fn gen_lines(seed: u64, n: u64, anomalies: f64) -> Vec<String> {
    let opts = runlog_gen::GenOptions {
        agents: n,
        seed,
        anomalies,
        ..Default::default()
    };
    (0..n)
        .flat_map(|i| runlog_gen::agent_lines(&opts, i))
        .collect()
}

/// Reduces every agent with the real reducer and with the oracle, and compares.
fn check_against_oracle(what: &str, ing: &Ingested, report: &mut Report) {
    let results: Vec<(usize, usize, Vec<String>)> = ing
        .agents
        .par_iter()
        .map(|a| {
            let derived = reduce_agent(&a.root, &a.events);
            let real = real_tables(&derived);
            let oracle = Oracle::new(&a.root, a.events.iter().map(event_value).collect()).tables();
            let rows = oracle.values().map(Vec::len).sum();
            let mut problems = diff_tables(&real, &oracle);
            // Read without the decoder's payload index, the same rows.
            let unindexed: Vec<Event> = a
                .events
                .iter()
                .map(|e| Event {
                    index: PayloadIndex::NONE,
                    ..e.clone()
                })
                .collect();
            if reduce_agent(&a.root, &unindexed) != derived {
                problems.push("reduced without the payload index, other rows".to_string());
            }
            (a.events.len(), rows, problems)
        })
        .collect();
    for (a, (events, rows, problems)) in ing.agents.iter().zip(results) {
        report.agents += 1;
        report.events += events;
        report.rows += rows;
        report.add(what, &a.root, &a.events, problems);
    }
}

// ---------------------------------------------------------------------------------------
// 1. The oracle agrees with the reducer

#[test]
fn oracle_agrees_on_generated_agents() {
    let start = Instant::now();
    let mut report = Report::default();
    // The whole stream as `runlog gen` writes it.
    let mut gen_stream = Vec::new();
    let opts = runlog_gen::GenOptions {
        agents: 1500,
        seed: 11,
        ..Default::default()
    };
    runlog_gen::write_to(&opts, &mut gen_stream).expect("gen writes");
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("runlog::gen", gen_stream),
        (
            "runlog::gen with anomalies",
            join_lines(&gen_lines(12, 500, 0.2)),
        ),
        ("randgen", join_lines(&random_lines(21, 1500, false))),
        (
            "randgen with anomalies",
            join_lines(&random_lines(22, 500, true)),
        ),
    ];
    for (what, bytes) in inputs {
        let ing = ingest(&[bytes]);
        assert!(!ing.agents.is_empty(), "{what}: no agents");
        let t = ing.totals();
        let sizes: Vec<usize> = ing.agents.iter().map(|a| a.events.len()).collect();
        eprintln!(
            "{what}: {} lines, {} kept, {} duplicates, {} rejects; {} agents of {}..={} events",
            t.lines,
            t.kept,
            t.duplicates,
            t.rejects,
            sizes.len(),
            sizes.iter().min().unwrap(),
            sizes.iter().max().unwrap()
        );
        check_against_oracle(what, &ing, &mut report);
    }
    report.finish("oracle_agrees_on_generated_agents");
    eprintln!("took {:.1?}", start.elapsed());
}

// ---------------------------------------------------------------------------------------
// 2. File order and line order do not matter

/// An agent's events without where they were read from (`file`, `line`).
fn placeless(ing: &Ingested) -> Vec<(String, Vec<Event>)> {
    ing.agents
        .iter()
        .map(|a| {
            let events = a
                .events
                .iter()
                .map(|e| Event {
                    file: 0,
                    line: 0,
                    ..e.clone()
                })
                .collect();
            (a.root.clone(), events)
        })
        .collect()
}

/// Shuffles the lines and splits them over several files, with several seeds: the kept
/// events and the derived tables must not change. With `exact`, byte for byte; otherwise
/// (duplicates written with other spacing, so the kept copy's text depends on the input
/// order) as JSON values.
fn check_order_independence(what: &str, lines: &[String], exact: bool) {
    let base = ingest(&[join_lines(lines)]);
    let base_derived = runlog_core::reduce_all(&base);
    let base_events = placeless(&base);
    let base_totals = base.totals();
    assert!(
        base.rejects.is_empty(),
        "{what}: input must be anomaly-free"
    );
    for seed in 1..=5u64 {
        let mut rng = Rng::new(seed * 7919);
        let mut shuffled = lines.to_vec();
        rng.shuffle(&mut shuffled);
        let parts = 1 + rng.below(8);
        let mut cuts: Vec<usize> = (0..parts - 1).map(|_| rng.below(shuffled.len())).collect();
        cuts.push(0);
        cuts.push(shuffled.len());
        cuts.sort_unstable();
        let files: Vec<Vec<u8>> = cuts
            .windows(2)
            .map(|w| join_lines(&shuffled[w[0]..w[1]]))
            .collect();
        let ing = ingest(&files);
        let t = ing.totals();
        assert_eq!(
            (t.lines, t.kept, t.duplicates, t.rejects),
            (
                base_totals.lines,
                base_totals.kept,
                base_totals.duplicates,
                base_totals.rejects
            ),
            "{what}, shuffle seed {seed}: ingest counts differ"
        );
        let events = placeless(&ing);
        let same_events = if exact {
            events == base_events
        } else {
            let as_json = |evs: &[(String, Vec<Event>)]| -> Vec<Vec<Value>> {
                evs.iter()
                    .map(|(_, e)| e.iter().map(event_value).collect())
                    .collect()
            };
            as_json(&events) == as_json(&base_events)
        };
        if !same_events {
            let (root, _) = events
                .iter()
                .zip(&base_events)
                .find(|(a, b)| a != b)
                .map(|(a, _)| a)
                .unwrap_or(&events[0]);
            panic!("{what}, shuffle seed {seed} ({parts} files): events of root {root:?} differ");
        }
        let derived = runlog_core::reduce_all(&ing);
        let problems = diff_tables(&real_tables(&derived), &real_tables(&base_derived));
        if (exact && derived != base_derived) || !problems.is_empty() {
            panic!(
                "{what}, shuffle seed {seed} ({parts} files): derived tables differ \
                 (reducer = shuffled, oracle = in order):\n{}",
                problems
                    .iter()
                    .take(10)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

#[test]
fn order_does_not_matter() {
    let start = Instant::now();
    check_order_independence("runlog::gen", &gen_lines(31, 300, 0.0), true);
    // randgen writes no duplicates of its own: add exact copies of some lines.
    let lines = random_lines(32, 300, false);
    let mut exact = lines.clone();
    let mut respaced = lines.clone();
    let mut rng = Rng::new(32);
    for _ in 0..lines.len() / 20 {
        let line = &lines[rng.below(lines.len())];
        exact.push(line.clone());
        let v: Value = serde_json::from_str(line).unwrap();
        respaced.push(serde_json::to_string_pretty(&v).unwrap().replace('\n', " "));
    }
    check_order_independence("randgen with exact duplicates", &exact, true);
    check_order_independence("randgen with re-spaced duplicates", &respaced, false);
    eprintln!("order_does_not_matter took {:.1?}", start.elapsed());
}

// ---------------------------------------------------------------------------------------
// 3. Replay at every cursor is the reduction of the log cut there

/// Every turn's state record as of `c`, from a fresh reducer over the events up to `c`.
fn fresh_records(root: &str, cut: &[Event], c: u64) -> Vec<Value> {
    let mut r = Reducer::new(root, true);
    for e in cut {
        r.apply(e);
    }
    r.turn_ids().map(|t| r.state_record(t, Some(c))).collect()
}

fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort_by_key(Value::to_string);
    v
}

fn check_replay(
    what: &str,
    ing: &Ingested,
    max_agents: usize,
    max_events: usize,
    report: &mut Report,
) {
    let agents: Vec<_> = ing
        .agents
        .iter()
        .filter(|a| a.events.len() <= max_events)
        .take(max_agents)
        .collect();
    if max_agents > 1 {
        eprintln!(
            "{what}: replaying {} agents ({} events) at every cursor",
            agents.len(),
            agents.iter().map(|a| a.events.len()).sum::<usize>()
        );
    }
    let results: Vec<(usize, usize, Vec<String>)> = agents
        .par_iter()
        .map(|a| {
            let values: Vec<Value> = a.events.iter().map(event_value).collect();
            let full = Oracle::new(&a.root, values.clone());
            let first = a.events[0].seq.saturating_sub(1);
            let last = a.events.last().unwrap().seq + 1;
            let mut problems = Vec::new();
            let mut rows = 0;
            for c in first..=last {
                let cut: Vec<Event> = a.events.iter().filter(|e| e.seq <= c).cloned().collect();
                let snap = runlog_core::replay::snapshot(&a.root, &a.events, c);
                if snap != fresh_records(&a.root, &cut, c) {
                    problems.push(format!(
                        "cursor {c}: replay::snapshot differs from a fresh reducer over the cut log"
                    ));
                }
                let want = sorted(full.snapshot(c));
                let got = sorted(snap);
                if got != want {
                    let diff = diff_rows("snapshot", &got, &want);
                    problems.push(format!(
                        "cursor {c}: snapshot vs oracle: {}",
                        diff.join("; ")
                    ));
                }
                let cut_values: Vec<Value> = values
                    .iter()
                    .filter(|v| v["seq"].as_u64().unwrap() <= c)
                    .cloned()
                    .collect();
                let oracle = Oracle::new(&a.root, cut_values).tables();
                rows += oracle.values().map(Vec::len).sum::<usize>() + want.len();
                let real = real_tables(&reduce_agent(&a.root, &cut));
                for p in diff_tables(&real, &oracle) {
                    problems.push(format!("cursor {c}: {p}"));
                }
                if problems.len() > 20 {
                    break;
                }
            }
            (a.events.len(), rows, problems)
        })
        .collect();
    for (a, (events, rows, problems)) in agents.iter().zip(results) {
        report.agents += 1;
        report.events += events;
        report.rows += rows;
        report.add(what, &a.root, &a.events, problems);
    }
}

#[test]
fn replay_at_every_cursor_matches_cut_log() {
    let start = Instant::now();
    let mut report = Report::default();
    let gen = ingest(&[join_lines(&gen_lines(41, 60, 0.0))]);
    check_replay("runlog::gen", &gen, 12, 300, &mut report);
    let rand = ingest(&[join_lines(&random_lines(42, 60, false))]);
    check_replay("randgen", &rand, 40, 150, &mut report);
    report.finish("replay_at_every_cursor_matches_cut_log");
    eprintln!("took {:.1?}", start.elapsed());
}

// ---------------------------------------------------------------------------------------
// 4. Hand-written corner cases (`oracle/edges.rs`), each checked against the oracle

#[test]
fn oracle_agrees_on_edge_cases() {
    let mut report = Report::default();
    for (name, events) in edge_cases() {
        let lines: Vec<String> = events
            .into_iter()
            .map(|(seq, s, t, typ, d)| edge_line(seq, s, t, typ, d))
            .collect();
        let ing = ingest(&[join_lines(&lines)]);
        check_against_oracle(name, &ing, &mut report);
        check_replay(name, &ing, 1, usize::MAX, &mut report);
    }
    report.finish("oracle_agrees_on_edge_cases");
}

// ---------------------------------------------------------------------------------------
// 5. Re-checking dumped agents

/// Reads an agent dumped by a failing run (one event per line as the oracle reads it).
fn read_dump(path: &str) -> Vec<Event> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}:{}: {e}", i + 1));
            let kind = v["type"].as_str().expect("type");
            let data = v["data"].to_string();
            Event {
                seq: v["seq"].as_u64().expect("seq"),
                ts: v["ts"].as_i64().expect("ts"),
                root: v["root"].as_str().expect("root").into(),
                session: v["session"].as_str().expect("session").into(),
                turn: v["turn"].as_str().map(Into::into),
                kind: kind.into(),
                index: PayloadIndex::of(kind, &data),
                data: data.into(),
                file: 0,
                line: i as u64 + 1,
            }
        })
        .collect()
}

/// `ORACLE_EVENTS=/tmp/oracle-x.jsonl[:...] cargo test --test oracle dumped -- --nocapture`
/// re-checks agents written out by a failing run (tables and replay at every cursor).
#[test]
fn oracle_agrees_on_dumped_agents() {
    let Ok(paths) = std::env::var("ORACLE_EVENTS") else {
        return;
    };
    let mut report = Report::default();
    for path in paths.split(':').filter(|p| !p.is_empty()) {
        let mut events = read_dump(path);
        events.sort_by_key(|e| e.seq);
        let root = events.first().map(|e| e.root.clone()).unwrap_or_default();
        let ing = Ingested {
            files: Vec::new(),
            skipped_files: Vec::new(),
            agents: vec![runlog_core::ingest::Agent {
                root: root.to_string(),
                events,
            }],
            rejects: Vec::new(),
        };
        check_against_oracle(path, &ing, &mut report);
        check_replay(path, &ing, 1, usize::MAX, &mut report);
    }
    report.finish("oracle_agrees_on_dumped_agents");
}
