//! `runlog report --baseline` and `--since/--until`: the statistics against known values,
//! two generated logs that differ in a known way (flagged) and two drawn alike (not
//! flagged), the JSON a release gate reads, and time windows on a log whose days are known.

use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray};
use std::process::Command;

use runlog::baseline::{compare, Comparison, Kind};
use runlog::query::{parse_time, restrict_to_window, run_sql, TimeWindow};
use runlog::report::Report;
use runlog::stats::{erfc, holm, two_proportion, ALPHA};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn runlog_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_runlog"))
}

/// Writes a generated log (`runlog gen` with these options) into `dir`.
fn gen(dir: &Path, name: &str, agents: u64, seed: u64, anomalies: f64) -> PathBuf {
    let p = dir.join(name);
    let opts = runlog_gen::GenOptions {
        agents,
        seed,
        anomalies,
        ..Default::default()
    };
    runlog_gen::write(&opts, &p).expect("gen");
    p
}

fn report_of(path: &Path, window: &TimeWindow) -> Report {
    let loaded = runlog::pipeline::load(&[path.to_path_buf()], &Default::default()).expect("load");
    let ctx =
        runlog::query::context_from_batches(loaded.batches().expect("batches")).expect("context");
    rt().block_on(runlog::report::build_in(&ctx, window))
        .expect("report")
}

/// The compared figure of a section's row (by its key) and measure.
fn figure<'a>(
    c: &'a Comparison,
    section: &str,
    key: &[&str],
    measure: &str,
) -> Option<&'a runlog::baseline::Compared> {
    let s = c.sections.iter().find(|s| s.id == section)?;
    let r = s.rows.iter().find(|r| r.key == key)?;
    r.measures.iter().find(|m| m.measure == measure)
}

fn erfc_and_the_normal_tail_match_known_values() {
    // erfc to ~1e-7 (Abramowitz & Stegun table values).
    for (x, want) in [
        (0.0, 1.0),
        (0.5, 0.479_500_122_186_953_5),
        (1.0, 0.157_299_207_050_285_1),
        (2.0, 0.004_677_734_981_047_266),
        (3.0, 2.209_049_699_858_544e-5),
        (-1.0, 1.842_700_792_949_715),
    ] {
        let got = erfc(x);
        assert!(
            (got - want).abs() <= 1.2e-7 * want.abs().max(1e-300) + 1e-12,
            "erfc({x}) = {got}, want {want}"
        );
    }
    // z = 1.96 is the 5% two-sided point, z = 2.5758 the 1% one.
    assert!((runlog::stats::two_sided_p(1.96) - 0.049_995_790).abs() < 1e-6);
    assert!((runlog::stats::two_sided_p(-2.575_829) - 0.01).abs() < 1e-6);
}

fn the_two_proportion_test_matches_known_p_values() {
    // (x1, n1, x2, n2, z, p) computed independently (pooled standard error, two-sided).
    for (x1, n1, x2, n2, z, p) in [
        (45.0, 100.0, 60.0, 100.0, 2.123_976_976, 0.033_672_069),
        (120.0, 1000.0, 90.0, 1000.0, -2.188_265_885, 0.028_650_240),
        (5.0, 50.0, 5.0, 60.0, -0.302_765_035, 0.762_068_931),
    ] {
        let t = two_proportion(x1, n1, x2, n2).expect("testable");
        assert!((t.z - z).abs() < 1e-6, "z {} want {z}", t.z);
        assert!((t.p_value - p).abs() < 1e-6, "p {} want {p}", t.p_value);
    }
    // No variance or an empty side: no test.
    assert!(two_proportion(0.0, 10.0, 0.0, 20.0).is_none());
    assert!(two_proportion(10.0, 10.0, 20.0, 20.0).is_none());
    assert!(two_proportion(1.0, 0.0, 2.0, 20.0).is_none());
}

fn holm_matches_a_hand_computed_example() {
    // Sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, but
    // never below the one before: 0.06).
    let p = [0.01, 0.04, 0.03, 0.005];
    let adj = holm(&p);
    for (got, want) in adj.iter().zip([0.03, 0.06, 0.06, 0.02]) {
        assert!((got - want).abs() < 1e-12, "{adj:?}");
    }
    let rejected: Vec<bool> = adj.iter().map(|a| *a <= ALPHA).collect();
    assert_eq!(rejected, [true, false, false, true]);
    // Capped at 1; order kept.
    assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
    assert!(holm(&[]).is_empty());
}

fn a_known_shift_is_flagged_and_the_same_distribution_is_not() {
    let dir = tempfile::tempdir().unwrap();
    // Clean logs against one with anomalies (malformed turn ends, truncated agents): the
    // intervals' statuses shift — protocol errors and unsettled intervals grow.
    let clean = gen(dir.path(), "clean.jsonl", 1500, 11, 0.0);
    let twin = gen(dir.path(), "twin.jsonl", 1500, 12, 0.0);
    let noisy = gen(dir.path(), "noisy.jsonl", 1500, 13, 0.2);
    let all = TimeWindow::default();
    let (c, t, n) = (
        report_of(&clean, &all),
        report_of(&twin, &all),
        report_of(&noisy, &all),
    );

    let shifted = compare(&c, &n);
    assert!(shifted.tests > 20, "many shares tested: {}", shifted.tests);
    let pe = figure(&shifted, "interval_status", &["protocol_error"], "share").expect("row");
    assert_eq!(pe.kind, Kind::Share);
    assert!(pe.change.unwrap() > 0.0 && pe.significant, "{pe:?}");
    assert!(pe.p_holm.unwrap() <= ALPHA && pe.p_value.unwrap() <= pe.p_holm.unwrap());
    // Truncated agents leave more intervals unsettled (a smaller shift: not asserted
    // significant after the correction over ~150 tests).
    let unsettled = figure(&shifted, "interval_status", &["unsettled"], "share").expect("row");
    assert!(unsettled.change.unwrap() > 0.0, "{unsettled:?}");
    assert!(unsettled.p_holm.unwrap() >= unsettled.p_value.unwrap());
    let settled = figure(&shifted, "interval_status", &["settled"], "share").expect("row");
    assert!(settled.change.unwrap() < 0.0 && settled.significant);

    let same = compare(&c, &t);
    let flagged: Vec<String> = same
        .sections
        .iter()
        .flat_map(|s| s.rows.iter().map(move |r| (s, r)))
        .flat_map(|(s, r)| {
            r.measures
                .iter()
                .filter(|m| m.significant)
                .map(move |m| format!("{} {:?} {}", s.id, r.key, m.measure))
        })
        .collect();
    assert!(flagged.is_empty(), "same generator settings: {flagged:?}");
    assert!(same.tests > 20);

    // Each side's figures are those of its plain report.
    for (cmp, base, cur) in [(&shifted, &c, &n), (&same, &c, &t)] {
        for id in [
            "finish_reasons",
            "interval_status",
            "turn_states",
            "tool_calls",
        ] {
            let plain = |r: &Report| {
                let s = r.sections.iter().find(|s| s.id == id).unwrap();
                let last_key = s
                    .columns
                    .iter()
                    .position(|c| c == "intervals" || c == "turns" || c == "calls")
                    .unwrap();
                s.rows
                    .iter()
                    .map(|row| {
                        (
                            row[..last_key].to_vec(),
                            row[last_key].parse::<f64>().unwrap(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            let sec = cmp.sections.iter().find(|s| s.id == id).unwrap();
            for (key, v) in plain(cur) {
                let r = sec.rows.iter().find(|r| r.key == key).expect("current row");
                assert_eq!(r.measures[0].current, Some(v), "{id} {key:?}");
            }
            for (key, v) in plain(base) {
                let r = sec
                    .rows
                    .iter()
                    .find(|r| r.key == key)
                    .expect("baseline row");
                assert_eq!(r.measures[0].baseline, Some(v), "{id} {key:?}");
            }
        }
    }
}

fn cli_json_carries_the_fields_a_release_gate_reads() {
    let dir = tempfile::tempdir().unwrap();
    let old = gen(dir.path(), "old.jsonl", 800, 21, 0.0);
    let new = gen(dir.path(), "new.jsonl", 800, 22, 0.3);
    // The baseline as a warehouse, the current side as log paths.
    let wh = dir.path().join("old-wh");
    let ingest = runlog_bin()
        .args(["ingest"])
        .arg(&old)
        .arg("--warehouse")
        .arg(&wh)
        .output()
        .unwrap();
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );
    let page = dir.path().join("cmp.html");
    let run = runlog_bin()
        .arg("report")
        .arg(&new)
        .arg("--baseline")
        .arg(&wh)
        .args(["--format", "json", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).expect("json");
    assert_eq!(doc["test"]["correction"], "holm");
    assert_eq!(doc["test"]["alpha"], 0.05);
    let sections = doc["sections"].as_array().unwrap();
    assert!(sections.len() >= 8);
    let mut significant = 0;
    for s in sections {
        for r in s["rows"].as_array().unwrap() {
            for f in ["baseline", "current", "change", "p_value", "significant"] {
                assert!(r.get(f).is_some(), "{} row without {f}: {r}", s["id"]);
            }
            assert!(r["significant"].is_boolean());
            if r["significant"] == true {
                significant += 1;
                assert!(r["p_value"].as_f64().unwrap() <= 0.05);
            }
        }
    }
    assert_eq!(doc["test"]["significant"], significant);
    assert!(significant > 0, "anomalies 0.3 vs 0 shifts something");
    let status = sections
        .iter()
        .find(|s| s["id"] == "interval_status")
        .unwrap();
    let pe = status["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["status"] == "protocol_error" && r["measure"] == "share")
        .expect("protocol_error share");
    assert_eq!(pe["significant"], true);

    // The numbers of each side equal its plain report's.
    let plain = |args: &[&std::ffi::OsStr]| -> serde_json::Value {
        let out = runlog_bin()
            .arg("report")
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let cur = plain(&[new.as_os_str()]);
    let base = plain(&["--warehouse".as_ref(), wh.as_os_str()]);
    for (side, rep) in [("current", &cur), ("baseline", &base)] {
        for row in rep["sections"][1]["rows"].as_array().unwrap() {
            let st = row["status"].as_str().unwrap();
            let n: f64 = row["intervals"].as_str().unwrap().parse().unwrap();
            let cmp = status["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["status"] == st && r["measure"] == "intervals")
                .unwrap();
            assert_eq!(cmp[side].as_f64(), Some(n), "{side} {st}");
        }
    }

    // The page: side-by-side bars, the rule named, shifts flagged.
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(r#"data-rule="holm""#) && html.contains("alpha = 0.05"));
    assert!(
        html.contains(r#"data-series="baseline""#) && html.contains(r#"data-series="current""#)
    );
    assert!(html.contains(r#"class="flagged""#));
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));

    // Text and Markdown name the rule too.
    for fmt in ["table", "markdown"] {
        let out = runlog_bin()
            .arg("report")
            .arg(&new)
            .arg("--baseline")
            .arg(&old)
            .args(["--format", fmt])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Holm") && text.contains("alpha = 0.05"),
            "{fmt}"
        );
        assert!(text.contains("protocol_error"), "{fmt}");
    }
}

/// One agent on a known day: a receipt, a turn with a model error, a tool call and a
/// callback, a model end and the turn end, idle, and a run attempt.
fn agent(root: &str, start: &str, turn_start: &str) -> String {
    let mut out = String::new();
    let mut seq = 0;
    let mut ev = |ts: &str, turn: bool, ty: &str, data: &str| {
        seq += 1;
        out.push_str(&format!(
            r#"{{"seq":{seq},"ts":"{ts}","root":"{root}","session":"{root}",{}"type":"{ty}"{}}}"#,
            if turn { r#""turn":"t1","# } else { "" },
            if data.is_empty() {
                String::new()
            } else {
                format!(r#","data":{data}"#)
            }
        ));
        out.push('\n');
    };
    ev(start, false, "session/start", r#"{"parent":null}"#);
    ev(
        start,
        false,
        "inbox/receipt",
        &format!(r#"{{"message_id":"m-{root}","kind":"prompt"}}"#),
    );
    ev(turn_start, true, "turn/start", "");
    ev(
        turn_start,
        true,
        "model/end",
        r#"{"error":{"code":"completion_unavailable","message":"503","retryable":true,"details":{"http_status":503}}}"#,
    );
    ev(
        turn_start,
        true,
        "tool/call",
        &format!(r#"{{"call_id":"c-{root}","name":"client.x","arguments":{{}}}}"#),
    );
    ev(
        turn_start,
        true,
        "tool/result",
        &format!(r#"{{"call_id":"c-{root}","status":"ok"}}"#),
    );
    ev(
        turn_start,
        true,
        "callback/open",
        &format!(r#"{{"callback_id":"k-{root}","kind":"approval"}}"#),
    );
    ev(
        turn_start,
        true,
        "callback/answer",
        &format!(r#"{{"callback_id":"k-{root}"}}"#),
    );
    ev(
        turn_start,
        true,
        "model/end",
        r#"{"finish_reason":"stop","usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}"#,
    );
    ev(
        turn_start,
        true,
        "turn/end",
        r#"{"reason":{"kind":"completed"},"text":"ok"}"#,
    );
    ev(turn_start, false, "agent/idle", "");
    ev(
        turn_start,
        false,
        "run.started",
        &format!(r#"{{"run_id":"r-{root}","attempt":1}}"#),
    );
    ev(
        turn_start,
        false,
        "run.completed",
        &format!(r#"{{"run_id":"r-{root}","attempt":1,"output":{{"status":"COMPLETED"}}}}"#),
    );
    out
}

/// Four agents: a, b, c on 3, 4 and 5 November at 10:00; d's interval opens on 4 November
/// at 23:59:59 and its turn starts just after midnight.
fn days_log(dir: &Path) -> PathBuf {
    let p = dir.join("days.jsonl");
    let text = [
        agent("a", "2026-11-03T10:00:00.000Z", "2026-11-03T10:00:01.000Z"),
        agent("b", "2026-11-04T10:00:00.000Z", "2026-11-04T10:00:01.000Z"),
        agent("c", "2026-11-05T10:00:00.000Z", "2026-11-05T10:00:01.000Z"),
        agent("d", "2026-11-04T23:59:59.000Z", "2026-11-05T00:00:00.500Z"),
    ]
    .concat();
    std::fs::write(&p, text).unwrap();
    p
}

fn times_parse_as_rfc3339_or_dates() {
    let day = parse_time("2026-11-04").unwrap();
    assert_eq!(parse_time("2026-11-04T00:00:00Z").unwrap(), day);
    assert_eq!(parse_time("2026-11-04T02:00:00+02:00").unwrap(), day);
    assert_eq!(parse_time("2026-11-04T00:00:00.5Z").unwrap(), day + 500_000);
    assert!(parse_time("yesterday").is_err());
    assert!(TimeWindow::parse(Some("2026-11-05"), Some("2026-11-04")).is_err());
    let w = TimeWindow::parse(Some("2026-11-04"), Some("2026-11-05")).unwrap();
    assert_eq!(
        w.to_string(),
        "[2026-11-04T00:00:00Z, 2026-11-05T00:00:00Z)"
    );
}

fn a_window_keeps_the_rows_of_its_days_by_each_tables_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = days_log(dir.path());
    let loaded =
        runlog::pipeline::load(std::slice::from_ref(&log), &Default::default()).expect("load");
    let ctx = runlog::query::context_from_batches(loaded.batches().unwrap()).unwrap();
    let rt = rt();
    let w = TimeWindow::parse(Some("2026-11-04"), Some("2026-11-05")).unwrap();
    rt.block_on(restrict_to_window(&ctx, &w)).unwrap();
    let roots = |sql: &str| -> Vec<String> {
        let (_, b) = rt
            .block_on(run_sql(&ctx, sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let mut out = Vec::new();
        for batch in &b {
            let c = datafusion::arrow::compute::cast(
                batch.column(0),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            let a = c.as_string::<i32>();
            out.extend((0..a.len()).map(|i| a.value(i).to_string()));
        }
        out
    };
    // The whole log has every table's rows for the four agents.
    for t in [
        "intervals",
        "turns",
        "errors",
        "tool_calls",
        "callbacks",
        "runs",
        "agents",
    ] {
        let all = roots(&format!(
            "SELECT DISTINCT root FROM unfiltered.{t} ORDER BY 1"
        ));
        assert_eq!(all, ["a", "b", "c", "d"], "unfiltered {t}");
    }
    // Intervals by opened_at: d's opened on the 4th. Agents overlapping the window: b, d.
    assert_eq!(roots("SELECT root FROM intervals ORDER BY 1"), ["b", "d"]);
    assert_eq!(roots("SELECT root FROM agents ORDER BY 1"), ["b", "d"]);
    // Turns by their start, and what happened in them by their event's ts: b only.
    for t in ["turns", "errors", "tool_calls", "callbacks", "runs"] {
        assert_eq!(
            roots(&format!("SELECT root FROM {t} ORDER BY 1")),
            ["b"],
            "{t} in the window"
        );
    }
    // Events by ts: all of b's and d's two before midnight.
    assert_eq!(
        roots("SELECT concat(root, ':', CAST(seq AS VARCHAR)) FROM events WHERE root <> 'b' ORDER BY 1"),
        ["d:1", "d:2"]
    );
    assert_eq!(
        roots("SELECT CAST(count(*) AS VARCHAR) FROM events WHERE root = 'b'"),
        ["13"]
    );
    // Rejects and files have no time: kept whole.
    assert_eq!(roots("SELECT CAST(count(*) AS VARCHAR) FROM files"), ["1"]);

    // The CLI: query and report, open-ended windows too.
    let q = |args: &[&str], sql: &str| -> String {
        let out = runlog_bin()
            .arg("query")
            .arg(&log)
            .args(args)
            .arg(sql)
            .args(["--format", "csv"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let sql = "SELECT root FROM turns ORDER BY root";
    assert_eq!(
        q(&["--since", "2026-11-04", "--until", "2026-11-05"], sql),
        "root\nb\n"
    );
    assert_eq!(q(&["--since", "2026-11-04T12:00:00Z"], sql), "root\nc\nd\n");
    assert_eq!(q(&["--until", "2026-11-04"], sql), "root\na\n");
    assert_eq!(q(&[], sql), "root\na\nb\nc\nd\n");
    let report = runlog_bin()
        .arg("report")
        .arg(&log)
        .args([
            "--since",
            "2026-11-04",
            "--until",
            "2026-11-05",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(doc["totals"]["intervals"], "2");
    assert_eq!(doc["totals"]["turns"], "1");
    // The time span is the window's events' (b's day and d's last second of it).
    let first = doc["totals"]["first_event"].as_str().unwrap();
    let last = doc["totals"]["last_event"].as_str().unwrap();
    assert!(first.starts_with("2026-11-04T10:00:00"), "{first}");
    assert!(last.starts_with("2026-11-04T23:59:59"), "{last}");
    assert_eq!(
        doc["totals"]["window"],
        "[2026-11-04T00:00:00Z, 2026-11-05T00:00:00Z)"
    );
    // A bad time is a clear error.
    let bad = runlog_bin()
        .arg("report")
        .arg(&log)
        .args(["--since", "soon"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("RFC 3339"));
}

fn two_windows_of_one_warehouse_compare() {
    let dir = tempfile::tempdir().unwrap();
    let log = days_log(dir.path());
    // In memory, and through one temporary warehouse both windows read (the way of logs
    // of 256 MiB or more).
    let compared = |spill: &str| {
        let out = runlog_bin()
            .arg("report")
            .arg(&log)
            .args([
                "--since",
                "2026-11-04",
                "--baseline-until",
                "2026-11-04",
                "--format",
                "json",
                "--spill-partitions",
                spill,
            ])
            .env("TMPDIR", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let stdout = compared("0");
    assert_eq!(compared("2"), stdout);
    // The temporary warehouse is gone: the log alone is left.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let doc: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let totals = doc["totals"].as_array().unwrap();
    let turns = totals.iter().find(|t| t["measure"] == "turns").unwrap();
    // Baseline: a's turn; current: b's, c's and d's.
    assert_eq!(turns["baseline"], 1.0);
    assert_eq!(turns["current"], 3.0);
    assert_eq!(turns["change"], 2.0);
    assert_eq!(doc["baseline"]["window"], "[-, 2026-11-04T00:00:00Z)");
    // The same window twice is refused.
    let same = runlog_bin()
        .arg("report")
        .arg(&log)
        .args(["--baseline-since", "2026-11-04"])
        .args(["--since", "2026-11-04"])
        .output()
        .unwrap();
    assert!(!same.status.success());
}

fn the_comparison_page_draws_both_sides_of_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let log = days_log(dir.path());
    let all = report_of(&log, &TimeWindow::default());
    let late = report_of(&log, &TimeWindow::parse(Some("2026-11-04"), None).unwrap());
    let cmp = compare(&all, &late);
    let html = runlog::html::render_comparison_html(&cmp);
    let sec = html
        .split(r#"data-section="interval_status">"#)
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .expect("interval_status section");
    let rows = &cmp
        .sections
        .iter()
        .find(|s| s.id == "interval_status")
        .unwrap()
        .rows;
    assert!(!rows.is_empty());
    // One baseline and one current bar per row, each with the row's share.
    for (series, pick) in [("baseline", 0), ("current", 1)] {
        let drawn: Vec<&str> = sec
            .split(&format!(r#"data-series="{series}" data-value=""#))
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
            .collect();
        let want: Vec<String> = rows
            .iter()
            .map(|r| {
                let m = r.measures.iter().find(|m| m.measure == "share").unwrap();
                let v = if pick == 0 { m.baseline } else { m.current };
                format!("{:.1}%", v.unwrap())
            })
            .collect();
        assert_eq!(drawn, want, "{series} bars");
    }
    assert!(html.contains(&cmp.rule_line()));
    assert!(
        html.contains(r#"data-side="current""#)
            && html.contains("window: [2026-11-04T00:00:00Z, -)")
    );
}

trials! {
    erfc_and_the_normal_tail_match_known_values,
    the_two_proportion_test_matches_known_p_values,
    holm_matches_a_hand_computed_example,
    a_known_shift_is_flagged_and_the_same_distribution_is_not,
    cli_json_carries_the_fields_a_release_gate_reads,
    times_parse_as_rfc3339_or_dates,
    a_window_keeps_the_rows_of_its_days_by_each_tables_time,
    two_windows_of_one_warehouse_compare,
    the_comparison_page_draws_both_sides_of_every_row,
}
