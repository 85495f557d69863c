//! What ingest and the reducer make of generated logs: the same options give the same
//! bytes (pinned), every layout holds the same lines and ingests to the same tables, the
//! accounting `GenStats` announces is what ingest finds, and the logs cover every kind,
//! error code and turn ending.

use std::path::Path;

use runlog_core::ingest::{assemble, parse_line, read_stream, IngestOptions, Ingested};
use runlog_core::reduce::{reduce_agent, rules, Derived};
use runlog_core::shard::fnv1a64;
use runlog_gen::*;
use std::collections::{BTreeMap, BTreeSet};

fn bytes(opts: &GenOptions) -> Vec<u8> {
    let mut v = Vec::new();
    let st = write_to(opts, &mut v).unwrap();
    assert_eq!(st.bytes, v.len() as u64);
    v
}

fn ingest(b: &[u8]) -> Ingested {
    let fr = read_stream(0, "gen.jsonl", b, &IngestOptions::default()).unwrap();
    assemble(vec![fr])
}

fn derive(ing: &Ingested) -> Derived {
    let mut d = Derived::default();
    for a in &ing.agents {
        d.append(reduce_agent(&a.root, &a.events));
    }
    d
}

fn opts(agents: u64, seed: u64, anomalies: f64) -> GenOptions {
    GenOptions {
        agents,
        seed,
        files: 1,
        anomalies,
        ..Default::default()
    }
}

#[test]
fn same_options_same_bytes() {
    let o = opts(60, 7, 0.0);
    let a = bytes(&o);
    assert_eq!(a, bytes(&o));
    // agent_lines gives the same lines in the same order.
    let mut joined = String::new();
    for i in 0..o.agents {
        for l in agent_lines(&o, i) {
            joined.push_str(&l);
            joined.push('\n');
        }
    }
    assert_eq!(joined.as_bytes(), &a[..]);
    let o2 = opts(60, 7, 0.5);
    assert_eq!(bytes(&o2), bytes(&o2));
}

#[test]
fn seeds_differ_and_agents_are_independent() {
    let a = bytes(&opts(20, 1, 0.0));
    let b = bytes(&opts(20, 2, 0.0));
    assert_ne!(a, b);
    // The first agents do not depend on how many there are.
    let small = bytes(&opts(5, 1, 0.0));
    assert!(a.starts_with(&small));
    // Root ids are unique per (seed, index).
    assert!(agent_lines(&opts(1, 255, 0.0), 0)[0].contains("\"root\":\"ag-ff-000000\""));
}

#[test]
fn clean_logs_are_all_valid() {
    let o = opts(200, 3, 0.0);
    let b = bytes(&o);
    let text = std::str::from_utf8(&b).unwrap();
    let mut lines = 0u64;
    for l in text.lines() {
        let ev = parse_line(l.as_bytes()).unwrap_or_else(|e| panic!("{e}: {l}"));
        let _: serde_json::Value = serde_json::from_str(&ev.data).unwrap();
        lines += 1;
    }
    let ing = ingest(&b);
    let t = ing.totals();
    assert!(ing.rejects.is_empty(), "{:?}", ing.rejects.first());
    assert_eq!(t.duplicates, 0);
    assert_eq!(t.kept, lines);
    assert_eq!(ing.agents.len(), 200);
    for a in &ing.agents {
        // Strictly increasing seq and ts, no gaps.
        for w in a.events.windows(2) {
            assert_eq!(w[1].seq, w[0].seq + 1, "{}", a.root);
            assert!(w[1].ts > w[0].ts, "{} seq {}", a.root, w[1].seq);
        }
    }
    let d = derive(&ing);
    let statuses: BTreeSet<&str> = d.intervals.iter().map(|i| i.status).collect();
    assert!(
        statuses.contains("settled") && statuses.contains("unsettled"),
        "{statuses:?}"
    );
    assert!(!statuses.contains("protocol_error"));
    assert!(d.turns.iter().all(|t| t.protocol_error.is_none()));
    // Several days for "finish reasons by day".
    let days: BTreeSet<i64> = d
        .intervals
        .iter()
        .map(|i| i.opened_at / 86_400_000_000)
        .collect();
    assert!(days.len() >= 4, "{days:?}");
}

#[test]
fn coverage_of_kinds_codes_and_shapes() {
    let o = opts(300, 11, 0.0);
    let ing = ingest(&bytes(&o));
    let d = derive(&ing);
    let mut classes = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    let mut types = BTreeSet::new();
    for a in &ing.agents {
        for e in &a.events {
            types.insert(e.kind.clone());
            if e.kind == "turn/end" {
                let v: serde_json::Value = serde_json::from_str(&e.data).unwrap();
                let k = v["reason"]["kind"].as_str().unwrap().to_string();
                classes.insert(format!("{:?}", rules::end_class(&k)));
                kinds.insert(k);
            }
        }
    }
    for c in [
        "Completed(false)",
        "Completed(true)",
        "Interrupted",
        "Failed",
        "Unknown",
    ] {
        assert!(classes.contains(c), "missing {c}: {classes:?}");
    }
    let known_kinds = [
        "completed",
        "end_turn",
        "COMPLETED",
        "task_complete",
        "max_tokens",
        "max-tokens",
        "skipped",
        "blocked",
        "stop_sequence",
        "refusal",
        "incomplete",
        "cancelled",
        "interrupted",
        "aborted",
        "CANCELLED",
        "replaced",
        "review_ended",
        "budget_limited",
        "error",
        "failed",
        "FAILED",
    ];
    let seen = known_kinds.iter().filter(|k| kinds.contains(**k)).count();
    assert!(seen >= 19, "only {seen} of the known kinds: {kinds:?}");
    let codes: BTreeSet<&str> = d.errors.iter().filter_map(|e| e.code.as_deref()).collect();
    let known = rules::KNOWN_CODES
        .iter()
        .filter(|c| codes.contains(*c))
        .count();
    assert!(known >= 15, "only {known} known codes: {codes:?}");
    assert!(d.errors.iter().any(|e| e.retryable_mismatch == Some(true)));
    assert!(d
        .errors
        .iter()
        .any(|e| e.retried == Some(true) && e.recovered == Some(true)));
    assert!(d.errors.iter().any(|e| e.status_consistent == Some(false)));
    assert!(d
        .errors
        .iter()
        .any(|e| e.details_reason.as_deref() == Some("time_limit")));
    assert!(d
        .errors
        .iter()
        .any(|e| e.details_reason.as_deref() == Some("after_compaction")));
    let states: BTreeMap<&str, usize> = d.turns.iter().fold(BTreeMap::new(), |mut m, t| {
        *m.entry(t.state.unwrap_or("NULL")).or_default() += 1;
        m
    });
    for s in [
        "Running",
        "Blocked",
        "Completed",
        "Interrupted",
        "Failed",
        "UnknownOutcome",
    ] {
        assert!(states.contains_key(s), "missing state {s}: {states:?}");
    }
    let causes: BTreeSet<&str> = d.turns.iter().filter_map(|t| t.cause.as_deref()).collect();
    assert!(
        causes.contains("cancelled") && causes.contains("interrupted") && causes.len() > 4,
        "{causes:?}"
    );
    let statuses: BTreeSet<&str> = d
        .tool_calls
        .iter()
        .filter_map(|t| t.status.as_deref())
        .collect();
    for s in [
        "ok",
        "error",
        "denied",
        "rejected",
        "approval_timed_out",
        "hook_skipped",
        "hook_failed",
        "invalid",
        "budget_exceeded",
    ] {
        assert!(
            statuses.contains(s),
            "missing tool status {s}: {statuses:?}"
        );
    }
    assert!(d.tool_calls.iter().any(|t| t.status.is_none()));
    let closed: BTreeSet<Option<&str>> = d.callbacks.iter().map(|c| c.closed_by).collect();
    assert_eq!(closed.len(), 3, "{closed:?}");
    let cb_kinds: BTreeSet<&str> = d
        .callbacks
        .iter()
        .filter_map(|c| c.kind.as_deref())
        .collect();
    assert!(cb_kinds.len() >= 4, "{cb_kinds:?}");
    // Callbacks opened by subagents and by grandchildren.
    // Session ids of subagents derive from their parent's: `<root>/sub-1/sub-2`.
    let depth = |s: &str| s.matches("/sub-").count();
    assert!(
        d.turns.iter().any(|t| depth(&t.session) == 2),
        "no grandchild turns"
    );
    assert!(d.callbacks.iter().any(|c| depth(&c.session) == 1));
    assert!(d.callbacks.iter().any(|c| depth(&c.session) == 2));
    let settles: BTreeSet<&str> = d.runs.iter().map(|r| r.settle).collect();
    assert_eq!(settles.len(), 4, "{settles:?}");
    let outs: BTreeSet<&str> = d
        .runs
        .iter()
        .filter_map(|r| r.output_status.as_deref())
        .collect();
    assert!(
        outs.contains("COMPLETED") && outs.contains("WAITING"),
        "{outs:?}"
    );
    assert!(d.runs.iter().any(|r| r.provisional_tail));
    assert!(d.runs.iter().any(|r| r.wait_for_kind.is_some()));
    assert!(d.intervals.iter().any(|i| i.joined_messages > 0));
    assert!(d.intervals.iter().any(|i| i.busy > 0));
    assert!(d.intervals.iter().any(|i| i.conflicts > 0));
    assert!(d.agents.iter().any(|a| a.stray_idles > 0));
    for t in [
        "compaction/start",
        "session/end",
        "progress",
        "log",
        "reasoning/delta",
        "hook/run",
    ] {
        assert!(types.contains(t), "missing type {t}");
    }
    let lines: usize = ing.agents.iter().map(|a| a.events.len()).sum();
    let avg = lines as f64 / ing.agents.len() as f64;
    assert!(
        (120.0..=300.0).contains(&avg),
        "average {avg} lines per agent"
    );
}

#[test]
fn anomalies_make_rejects_duplicates_and_protocol_errors() {
    let o = opts(200, 5, 0.5);
    let b = bytes(&o);
    let ing = ingest(&b);
    let t = ing.totals();
    assert_eq!(t.lines, t.kept + t.duplicates + t.rejects);
    assert!(t.rejects > 0 && t.duplicates > 0, "{t:?}");
    assert!(ing.rejects.iter().any(|r| r.reason.contains("conflicts")));
    assert!(ing
        .rejects
        .iter()
        .any(|r| r.reason.contains("not valid JSON")));
    let d = derive(&ing);
    assert!(d.intervals.iter().any(|i| i.status == "protocol_error"));
    assert!(d.turns.iter().any(|t| t.protocol_error.is_some()));
    assert!(d.agents.iter().any(|a| a.seq_gaps > 0));
    // Anomalies are layered on the same base log.
    let clean = agent_lines(&opts(1, 5, 0.0), 0);
    let noisy = agent_lines(&o, 0);
    assert!(clean.iter().take(3).all(|l| noisy.contains(l)));
}

#[test]
fn files_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    let o = GenOptions {
        agents: 40,
        seed: 9,
        files: 3,
        anomalies: 0.0,
        ..Default::default()
    };
    let st = write(&o, &dir.path().join("many")).unwrap();
    assert_eq!(st.files, 3);
    let plain = bytes(&opts(40, 9, 0.0));
    let want = ingest(&plain);
    let got =
        runlog_core::ingest::ingest_paths(&[dir.path().join("many")], &IngestOptions::default())
            .unwrap();
    assert_eq!(got.totals().kept, want.totals().kept);
    assert_eq!(got.totals().bytes, st.bytes);
    for ext in ["gz", "zst", "jsonl"] {
        let p = dir.path().join(format!("one.{ext}"));
        let st = write(&opts(40, 9, 0.0), &p).unwrap();
        assert_eq!(st.bytes, plain.len() as u64);
        let got = runlog_core::ingest::ingest_paths(&[p], &IngestOptions::default()).unwrap();
        assert_eq!(got.totals().kept, want.totals().kept);
        assert!(got.rejects.is_empty());
    }
    // Split agents and out-of-order lines over files still ingest to the same events.
    let noisy = GenOptions {
        agents: 60,
        seed: 4,
        files: 4,
        anomalies: 1.0,
        ..Default::default()
    };
    write(&noisy, &dir.path().join("noisy")).unwrap();
    let got =
        runlog_core::ingest::ingest_paths(&[dir.path().join("noisy")], &IngestOptions::default())
            .unwrap();
    let t = got.totals();
    assert_eq!(t.lines, t.kept + t.duplicates + t.rejects);
    assert!(t.rejects > 0);
    assert!(write(
        &GenOptions {
            files: 0,
            ..Default::default()
        },
        &dir.path().join("x")
    )
    .is_err());
}

/// Ingest reports exactly the accounting gen predicts, for a stream and for
/// folders (agents split over two files, the second sorting first when it wraps to 0).
#[test]
fn ingest_matches_expected_accounting() {
    let dir = tempfile::tempdir().unwrap();
    let check = |what: &str, st: &GenStats, ing: &Ingested| {
        let t = ing.totals();
        let got = (t.lines, t.kept, t.duplicates, t.rejects);
        let want = (
            st.lines,
            st.expected_kept,
            st.expected_duplicates,
            st.expected_rejects,
        );
        assert_eq!(got, want, "{what}: (lines, kept, duplicates, rejects)");
        assert_eq!(
            st.lines,
            st.expected_kept + st.expected_duplicates + st.expected_rejects
        );
        assert_eq!(t.rejects as usize, ing.rejects.len(), "{what}");
    };
    let (mut dups, mut rejects, mut conflicts) = (0, 0, 0);
    for seed in [1, 2, 3, 7, 42] {
        for rate in [0.0, 0.05, 0.3, 1.0] {
            let o = opts(50, seed, rate);
            let mut v = Vec::new();
            let st = write_to(&o, &mut v).unwrap();
            let ing = ingest(&v);
            check(&format!("stream seed {seed} rate {rate}"), &st, &ing);
            if rate == 0.0 {
                assert_eq!((st.expected_duplicates, st.expected_rejects), (0, 0));
            }
            dups += st.expected_duplicates;
            rejects += st.expected_rejects;
            for files in [1, 3, 4] {
                let o = GenOptions { files, ..o.clone() };
                let out = dir.path().join(format!("s{seed}-r{rate}-f{files}"));
                std::fs::create_dir_all(&out).unwrap();
                let st = write(&o, &out).unwrap();
                let ing =
                    runlog_core::ingest::ingest_paths(&[out], &IngestOptions::default()).unwrap();
                check(
                    &format!("{files} files, seed {seed} rate {rate}"),
                    &st,
                    &ing,
                );
                if rate == 0.0 {
                    assert_eq!((st.expected_duplicates, st.expected_rejects), (0, 0));
                }
                conflicts += ing
                    .rejects
                    .iter()
                    .filter(|r| r.reason.contains("conflicts"))
                    .count();
            }
        }
    }
    assert!(dups > 0 && rejects > 0 && conflicts > 0);
    // Agents whose outcome depends on the second file sorting first (file 0 after the
    // last): predicting in written order gets these wrong.
    for (seed, files) in [(13, 3), (31, 3), (31, 4)] {
        let o = GenOptions {
            agents: 200,
            seed,
            files,
            anomalies: 1.0,
            ..Default::default()
        };
        let out = dir.path().join(format!("wrap-s{seed}-f{files}"));
        let st = write(&o, &out).unwrap();
        let ing = runlog_core::ingest::ingest_paths(&[out], &IngestOptions::default()).unwrap();
        check(&format!("wrap: {files} files, seed {seed}"), &st, &ing);
    }
}

fn spread(
    agents: u64,
    seed: u64,
    files: u32,
    anomalies: f64,
    layout: Layout,
    mix: Mix,
) -> GenOptions {
    GenOptions {
        agents,
        seed,
        files,
        anomalies,
        layout,
        mix,
    }
}

/// The files of a folder written by `write`, in name order.
fn folder(o: &GenOptions, dir: &Path) -> (GenStats, Vec<Vec<u8>>) {
    std::fs::create_dir_all(dir).unwrap();
    let st = write(o, dir).unwrap();
    let files = (0..o.files as usize)
        .map(|i| std::fs::read(dir.join(part_name(i))).unwrap())
        .collect::<Vec<_>>();
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        o.files as usize,
        "no scratch files left"
    );
    assert_eq!(st.bytes, files.iter().map(|f| f.len() as u64).sum::<u64>());
    (st, files)
}

/// The default layout and mix write what `runlog gen` wrote before they existed: FNV-1a
/// of the bytes from the generator at 2b05103 (a stream, a stream with anomalies, and
/// folders with and without anomalies).
#[test]
fn by_agent_deltas_bytes_are_pinned() {
    let mut v = Vec::new();
    write_to(&opts(60, 7, 0.0), &mut v).unwrap();
    assert_eq!(fnv1a64(&v), 0x8ad86a14b8b277dd);
    v.clear();
    write_to(&opts(60, 7, 0.5), &mut v).unwrap();
    assert_eq!(fnv1a64(&v), 0x3b69f651673f320e);
    let dir = tempfile::tempdir().unwrap();
    let cases: [(u64, u64, u32, f64, &[u64]); 2] = [
        (
            80,
            4,
            4,
            1.0,
            &[
                0x561b43931f961cab,
                0x70ba9fa88886a4dc,
                0x3a5a7b6c04ff0247,
                0xe3a91cde91624748,
            ],
        ),
        (
            50,
            2,
            3,
            0.0,
            &[0x291d0ccb8818251d, 0x51d23ef7d12936f9, 0xd0c4ebf5e25677f5],
        ),
    ];
    for (agents, seed, files, rate, want) in cases {
        let o = GenOptions {
            agents,
            seed,
            files,
            anomalies: rate,
            ..Default::default()
        };
        assert_eq!((o.layout, o.mix), (Layout::ByAgent, Mix::Deltas));
        let (_, got) = folder(&o, &dir.path().join(format!("{agents}-{seed}")));
        let got: Vec<u64> = got.iter().map(|f| fnv1a64(f)).collect();
        assert_eq!(got, want, "{agents} agents, seed {seed}, {files} files");
    }
}

#[test]
fn layouts_and_mixes_parse_and_print() {
    for l in Layout::ALL {
        assert_eq!(l.to_string().parse::<Layout>(), Ok(l));
    }
    for m in Mix::ALL {
        assert_eq!(m.to_string().parse::<Mix>(), Ok(m));
    }
    assert_eq!("rotated".parse::<Layout>(), Ok(Layout::Rotated));
    assert_eq!("persisted".parse::<Mix>(), Ok(Mix::Persisted));
    assert!("by_agent".parse::<Layout>().is_err());
    assert!("delta".parse::<Mix>().is_err());
    let o = spread(3, 1, 1, 0.0, Layout::Rotated, Mix::Deltas);
    assert!(
        write_to(&o, &mut Vec::new()).is_err(),
        "a stream is by agent"
    );
}

#[test]
fn every_layout_and_mix_same_arguments_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for layout in Layout::ALL {
        for mix in Mix::ALL {
            for files in [1, 4] {
                let o = spread(150, 3, files, 0.2, layout, mix);
                let name = format!("{layout}-{mix}-{files}");
                let (sa, a) = folder(&o, &dir.path().join(format!("{name}-a")));
                let (sb, b) = folder(&o, &dir.path().join(format!("{name}-b")));
                assert_eq!(a, b, "{name}");
                assert_eq!(sa, sb, "{name}");
                assert!(a.iter().all(|f| !f.is_empty()), "{name}: an empty file");
            }
        }
    }
}

fn line_multiset(files: &[Vec<u8>]) -> BTreeMap<Vec<u8>, usize> {
    let mut m = BTreeMap::new();
    for f in files {
        for l in f.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            *m.entry(l.to_vec()).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn every_layout_holds_the_same_lines() {
    let dir = tempfile::tempdir().unwrap();
    for mix in Mix::ALL {
        for rate in [0.0, 0.3] {
            let mut want: Option<(BTreeMap<Vec<u8>, usize>, GenStats)> = None;
            for layout in Layout::ALL {
                let o = spread(120, 8, 4, rate, layout, mix);
                let (st, files) = folder(&o, &dir.path().join(format!("{layout}-{mix}-{rate}")));
                let lines = line_multiset(&files);
                match &want {
                    None => want = Some((lines, st)),
                    Some((w, wst)) => {
                        assert!(*w == lines, "{layout} {mix} {rate}: other lines");
                        assert_eq!((st.lines, st.bytes), (wst.lines, wst.bytes));
                    }
                }
            }
        }
    }
}

/// `"ts":"..."` of a generated line (fixed-width, so text order is time order).
fn ts_of(line: &[u8]) -> &[u8] {
    let at = memchr::memmem::find(line, b"\"ts\":\"").unwrap() + 6;
    &line[at..at + 24]
}

fn root_of(line: &[u8]) -> &[u8] {
    let at = memchr::memmem::find(line, b"\"root\":\"").unwrap() + 8;
    let end = at + memchr::memchr(b'"', &line[at..]).unwrap();
    &line[at..end]
}

#[test]
fn rotated_files_are_consecutive_time_windows() {
    let dir = tempfile::tempdir().unwrap();
    for mix in Mix::ALL {
        let o = spread(400, 5, 5, 0.0, Layout::Rotated, mix);
        let (_, files) = folder(&o, &dir.path().join(mix.name()));
        let mut prev_max: Option<Vec<u8>> = None;
        for (k, f) in files.iter().enumerate() {
            let lines: Vec<&[u8]> = f.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
            let ts: Vec<&[u8]> = lines.iter().map(|l| ts_of(l)).collect();
            assert!(
                ts.windows(2).all(|w| w[0] <= w[1]),
                "file {k} not in time order"
            );
            if let Some(p) = &prev_max {
                assert!(
                    p.as_slice() <= ts[0],
                    "file {k} starts before file {} ends",
                    k - 1
                );
            }
            prev_max = Some(ts[ts.len() - 1].to_vec());
            // Many agents per file, interleaved: an agent's lines in a file are cut by other
            // agents' lines into several blocks (as many as the agents overlap in time).
            let roots: BTreeSet<&[u8]> = lines.iter().map(|l| root_of(l)).collect();
            assert!(roots.len() >= 40, "file {k}: {} agents", roots.len());
            let changes = lines
                .windows(2)
                .filter(|w| root_of(w[0]) != root_of(w[1]))
                .count();
            assert!(
                changes >= 2 * roots.len(),
                "file {k}: agents not interleaved"
            );
        }
    }
}

#[test]
fn scattered_spreads_each_agent_over_files_out_of_seq_order() {
    let dir = tempfile::tempdir().unwrap();
    for mix in Mix::ALL {
        let o = spread(300, 6, 4, 0.0, Layout::Scattered, mix);
        let (_, files) = folder(&o, &dir.path().join(mix.name()));
        // Per root: (file, seq) of each line in the order ingest reads them.
        let mut by_root: BTreeMap<Vec<u8>, Vec<(usize, u64)>> = BTreeMap::new();
        for (k, f) in files.iter().enumerate() {
            for l in f.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let v: serde_json::Value = serde_json::from_slice(l).unwrap();
                let seq = v["seq"].as_u64().unwrap();
                by_root
                    .entry(root_of(l).to_vec())
                    .or_default()
                    .push((k, seq));
            }
        }
        assert_eq!(by_root.len(), 300);
        let mut spread_out = 0;
        let mut big = 0;
        for lines in by_root.values().filter(|l| l.len() >= 12) {
            big += 1;
            let in_files: BTreeSet<usize> = lines.iter().map(|l| l.0).collect();
            let in_order = lines.windows(2).all(|w| w[0].1 < w[1].1);
            if in_files.len() >= 2 && !in_order {
                spread_out += 1;
            }
        }
        assert!(big >= 100, "{mix}: {big} agents of 12 lines or more");
        assert_eq!(
            spread_out, big,
            "{mix}: every agent over ≥ 2 files out of seq order"
        );
    }
}

#[test]
fn persisted_mix_shares_are_near_the_target() {
    let o = spread(2000, 1, 1, 0.0, Layout::ByAgent, Mix::Persisted);
    let b = bytes(&o);
    let ing = ingest(&b);
    assert!(ing.rejects.is_empty());
    let mut n: BTreeMap<&str, u64> = BTreeMap::new();
    let mut total = 0u64;
    let mut bare = [0u64; 2];
    for a in &ing.agents {
        for e in &a.events {
            total += 1;
            let k: &str = &e.kind;
            let class = match k {
                "text/delta" | "reasoning/delta" | "model/end" | "progress" => k,
                "tool/call" | "tool/result" => "tool",
                "turn/start" | "turn/end" => "turn",
                "inbox/receipt" | "agent/idle" => "receipt+idle",
                _ if k.starts_with("session/") => "session",
                _ if k.starts_with("callback/") => "callback",
                _ => "other",
            };
            *n.entry(class).or_default() += 1;
            if k == "turn/start" || k == "agent/idle" {
                bare[0] += 1;
                bare[1] += (e.data == "{}") as u64;
            }
        }
    }
    let pct = |c: &str| 100.0 * *n.get(c).unwrap_or(&0) as f64 / total as f64;
    let target = [
        ("text/delta", 17.0),
        ("reasoning/delta", 5.0),
        ("model/end", 16.0),
        ("tool", 19.0),
        ("turn", 17.0),
        ("receipt+idle", 12.0),
        ("session", 6.0),
        ("progress", 3.0),
        ("callback", 3.0),
    ];
    for (c, want) in target {
        let got = pct(c);
        let tol = (want * 0.25_f64).max(1.5);
        assert!(
            (got - want).abs() <= tol,
            "{c}: {got:.1}% against {want}% ({n:?})"
        );
    }
    assert!(pct("other") <= 6.0, "{n:?}");
    let per_agent = total as f64 / ing.agents.len() as f64;
    assert!(
        (38.0..=50.0).contains(&per_agent),
        "{per_agent} events per agent"
    );
    // ~25,000 agents per 200 MB.
    let bytes_per_agent = b.len() as f64 / ing.agents.len() as f64;
    assert!(
        (6500.0..=10_500.0).contains(&bytes_per_agent),
        "{bytes_per_agent} bytes per agent"
    );
    assert!(
        bare[1] * 10 >= bare[0] * 9,
        "turn/start and agent/idle without data"
    );
    // Subagent sessions.
    let depth1 = ing
        .agents
        .iter()
        .flat_map(|a| &a.events)
        .filter(|e| &*e.kind == "session/start" && e.session.contains("/sub-"))
        .count();
    assert!(
        depth1 as f64 >= 0.3 * ing.agents.len() as f64,
        "{depth1} subagents"
    );
    // The reducer sees a clean log.
    let d = derive(&ing);
    assert!(d.intervals.iter().all(|i| i.status != "protocol_error"));
}

/// Every row of the tables, as text, sorted: the same whatever the files and lines.
fn tables(ing: &Ingested) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    for a in &ing.agents {
        for e in &a.events {
            rows.push(format!(
                "event {} {} {} {} {:?} {} {}",
                e.root, e.seq, e.ts, e.session, e.turn, e.kind, e.data
            ));
        }
    }
    let d = runlog_core::reduce::reduce_all(ing);
    rows.extend(d.intervals.iter().map(|r| format!("interval {r:?}")));
    rows.extend(d.turns.iter().map(|r| format!("turn {r:?}")));
    rows.extend(d.errors.iter().map(|r| format!("error {r:?}")));
    rows.extend(d.tool_calls.iter().map(|r| format!("tool {r:?}")));
    rows.extend(d.callbacks.iter().map(|r| format!("callback {r:?}")));
    rows.extend(d.runs.iter().map(|r| format!("run {r:?}")));
    rows.extend(d.agents.iter().map(|r| format!("agent {r:?}")));
    rows.sort();
    rows
}

#[test]
fn every_layout_ingests_to_the_same_tables() {
    let dir = tempfile::tempdir().unwrap();
    for mix in Mix::ALL {
        let mut want: Option<Vec<String>> = None;
        for layout in Layout::ALL {
            let o = spread(250, 12, 6, 0.0, layout, mix);
            let out = dir.path().join(format!("{layout}-{mix}"));
            let st = write(&o, &out).unwrap();
            let ing = runlog_core::ingest::ingest_paths(&[out], &IngestOptions::default()).unwrap();
            assert!(ing.rejects.is_empty(), "{layout} {mix}");
            assert_eq!(ing.totals().kept, st.lines);
            let t = tables(&ing);
            assert!(t.len() as u64 > st.lines, "{layout} {mix}: derived rows");
            match &want {
                None => want = Some(t),
                Some(w) => assert!(*w == t, "{layout} {mix}: other tables"),
            }
        }
    }
}

/// With anomalies, the accounting gen predicts for the other layouts (read in their
/// order: the kept line of a seq is the first ingest reads) is what ingest reports.
#[test]
fn every_layout_matches_expected_accounting() {
    let dir = tempfile::tempdir().unwrap();
    for layout in [Layout::Rotated, Layout::Scattered] {
        for mix in Mix::ALL {
            for (seed, rate) in [(1, 0.3), (2, 1.0)] {
                for files in [1, 3] {
                    let o = spread(120, seed, files, rate, layout, mix);
                    let out = dir.path().join(format!("{layout}-{mix}-{seed}-{files}"));
                    let st = write(&o, &out).unwrap();
                    let ing = runlog_core::ingest::ingest_paths(&[out], &IngestOptions::default())
                        .unwrap();
                    let t = ing.totals();
                    assert_eq!(
                        (t.lines, t.kept, t.duplicates, t.rejects),
                        (
                            st.lines,
                            st.expected_kept,
                            st.expected_duplicates,
                            st.expected_rejects
                        ),
                        "{layout} {mix} seed {seed} {files} files"
                    );
                    assert!(st.expected_rejects > 0 && st.expected_duplicates > 0);
                }
            }
        }
    }
}
