//! Timeline pages (`runlog replay --html`, `runlog report --html-dir`): every row of the
//! agent's tables is drawn once, in its session's lane, in seq order, with details that
//! name it — checked by parsing the produced HTML against the tables ingest derived (not
//! the page's own pass over the events) for the golden cases and generated logs; and the
//! drill-down folder links every notable agent up to its cap.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use runlog::loaded::Loaded;
use runlog::timeline::{build, page_file_name, render_page, PageOptions};
use runlog_core::reduce::Derived;
use serde_json::Value;

use crate::html::unescape;

/// One drawn element: its classes, lane (session), `data-seq`, `data-count`, `data-i`.
#[derive(Debug, Clone)]
struct El {
    classes: Vec<String>,
    lane: Option<String>,
    seq: i64,
    count: i64,
    i: usize,
}

/// The attributes of a tag's text (after its name), unescaped.
fn attrs(tag: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq]
            .rsplit(' ')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let after = &rest[eq + 2..];
        let Some(end) = after.find('"') else { break };
        out.insert(name, unescape(&after[..end]));
        rest = &after[end + 1..];
    }
    out
}

/// The text between `start` and the next `end`.
fn between<'a>(s: &'a str, start: &str, end: &str) -> &'a str {
    let i = s.find(start).unwrap_or_else(|| panic!("no {start}")) + start.len();
    let j = s[i..].find(end).unwrap_or_else(|| panic!("no {end}")) + i;
    &s[i..j]
}

/// Every element of the plot with a `data-i`, in document order, with its lane.
fn elements(html: &str) -> Vec<El> {
    let plot = between(html, "<svg class=\"plot\"", "</svg>");
    let mut lane: Option<String> = None;
    let mut out = Vec::new();
    for piece in plot.split('<').skip(1) {
        let tag = piece.split('>').next().unwrap_or("");
        if tag.starts_with("/g") {
            lane = None;
            continue;
        }
        let a = attrs(tag);
        let classes: Vec<String> = a
            .get("class")
            .map(|c| c.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        if classes.iter().any(|c| c == "tl-lane") {
            lane = a.get("data-session").cloned();
            continue;
        }
        let Some(i) = a.get("data-i") else { continue };
        out.push(El {
            classes,
            lane: lane.clone(),
            seq: a["data-seq"].parse().expect("data-seq"),
            count: a.get("data-count").map_or(1, |c| c.parse().expect("count")),
            i: i.parse().expect("data-i"),
        });
    }
    out
}

/// The page's details (the JSON its script reads).
fn details(html: &str) -> Vec<Value> {
    let data = between(
        html,
        r#"<script type="application/json" id="tl-data">"#,
        "</script>",
    );
    serde_json::from_str(data).expect("details are JSON")
}

fn of_class<'a>(els: &'a [El], class: &str) -> Vec<&'a El> {
    els.iter()
        .filter(|e| e.classes.iter().any(|c| c == class))
        .collect()
}

/// The agent's rows of the loaded tables.
fn rows_of(d: &Derived, root: &str) -> Derived {
    Derived {
        intervals: d
            .intervals
            .iter()
            .filter(|r| r.root.as_str() == root)
            .cloned()
            .collect(),
        turns: d
            .turns
            .iter()
            .filter(|r| r.root.as_str() == root)
            .cloned()
            .collect(),
        errors: d
            .errors
            .iter()
            .filter(|r| r.root.as_str() == root)
            .cloned()
            .collect(),
        tool_calls: d
            .tool_calls
            .iter()
            .filter(|r| r.root.as_str() == root)
            .cloned()
            .collect(),
        callbacks: d
            .callbacks
            .iter()
            .filter(|r| r.root.as_str() == root)
            .cloned()
            .collect(),
        runs: d
            .runs
            .iter()
            .filter(|r| r.root.as_str() == root)
            .cloned()
            .collect(),
        agents: Vec::new(),
    }
}

/// (session, seq) of every element of a class, in document order.
fn drawn(els: &[El], class: &str) -> Vec<(Option<String>, i64)> {
    of_class(els, class)
        .iter()
        .map(|e| (e.lane.clone(), e.seq))
        .collect()
}

/// Rows as (session, seq), in the page's order: by lane (the lanes' order on the page),
/// then seq.
fn expected(
    lanes: &[String],
    rows: impl Iterator<Item = (Option<String>, i64)>,
) -> Vec<(Option<String>, i64)> {
    let mut v: Vec<_> = rows.collect();
    v.sort_by_key(|(s, seq)| {
        let lane = s
            .as_ref()
            .and_then(|s| lanes.iter().position(|l| l == s))
            .unwrap_or(usize::MAX);
        (lane, *seq)
    });
    v
}

/// Checks one agent's page against its rows; returns the problems found.
fn check_agent(derived: &Derived, root: &str, events: &[runlog_core::Event]) -> Vec<String> {
    let mut problems = Vec::new();
    let t = build(root, events);
    let html = render_page(&t, &PageOptions::default());
    let els = elements(&html);
    let det = details(&html);
    let rows = rows_of(derived, root);
    let lanes: Vec<String> = t.sessions.iter().map(|s| s.id.clone()).collect();
    let mut cmp =
        |what: &str, got: Vec<(Option<String>, i64)>, want: Vec<(Option<String>, i64)>| {
            if got != want {
                problems.push(format!("{root}: {what}: drawn {got:?}, rows {want:?}"));
            }
        };
    let s = |x: &runlog_core::event::Id| Some(x.to_string());
    cmp(
        "turns",
        drawn(&els, "tl-turn"),
        expected(
            &lanes,
            rows.turns.iter().map(|r| (s(&r.session), r.start_seq)),
        ),
    );
    let tools = of_class(&els, "tl-tool");
    if tools
        .iter()
        .any(|e| e.classes.iter().any(|c| c == "tl-bin"))
    {
        // Binned (past the budget): every call counted once.
        let counted: i64 = tools.iter().map(|e| e.count).sum();
        cmp(
            "tool calls counted in bins",
            vec![(None, counted)],
            vec![(None, rows.tool_calls.len() as i64)],
        );
    } else {
        cmp(
            "tool calls",
            drawn(&els, "tl-tool"),
            expected(
                &lanes,
                rows.tool_calls.iter().map(|r| (s(&r.session), r.seq)),
            ),
        );
    }
    cmp(
        "callbacks",
        drawn(&els, "tl-callback"),
        expected(
            &lanes,
            rows.callbacks.iter().map(|r| (s(&r.session), r.open_seq)),
        ),
    );
    cmp(
        "errors",
        drawn(&els, "tl-error"),
        expected(&lanes, rows.errors.iter().map(|r| (s(&r.session), r.seq))),
    );
    // Intervals and run attempts are the agent's, drawn above the lanes.
    cmp(
        "intervals",
        drawn(&els, "tl-interval"),
        expected(&lanes, rows.intervals.iter().map(|r| (None, r.open_seq))),
    );
    cmp(
        "runs",
        drawn(&els, "tl-run"),
        expected(&lanes, rows.runs.iter().map(|r| (None, r.start_seq))),
    );
    // Turn bars are coloured by the row's state; open callbacks are marked open.
    let states: Vec<String> = of_class(&els, "tl-turn")
        .iter()
        .map(|e| {
            e.classes
                .iter()
                .find(|c| c.starts_with("st-"))
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    let mut want_turns: Vec<_> = rows.turns.iter().collect();
    want_turns.sort_by_key(|r| {
        (
            lanes.iter().position(|l| l == r.session.as_str()),
            r.start_seq,
        )
    });
    let want_states: Vec<String> = want_turns
        .iter()
        .map(|r| {
            format!(
                "st-{}",
                r.state.unwrap_or("protocol_error").to_ascii_lowercase()
            )
        })
        .collect();
    if states != want_states {
        problems.push(format!(
            "{root}: turn states {states:?}, rows {want_states:?}"
        ));
    }
    let open_cbs = of_class(&els, "tl-callback")
        .iter()
        .filter(|e| e.classes.iter().any(|c| c == "tl-open"))
        .count();
    let want_open = rows
        .callbacks
        .iter()
        .filter(|c| c.close_seq.is_none())
        .count();
    if open_cbs != want_open {
        problems.push(format!(
            "{root}: {open_cbs} open callbacks drawn, {want_open} in rows"
        ));
    }
    let provisional = of_class(&els, "tl-provisional").len();
    let want_prov = rows.runs.iter().filter(|r| r.provisional_tail).count();
    if provisional != want_prov {
        problems.push(format!(
            "{root}: {provisional} provisional tails drawn, {want_prov} in rows"
        ));
    }
    // Model calls and voices: every event counted once, singly or in a bin.
    let model_events: Vec<i64> = events
        .iter()
        .filter(|e| e.kind.as_str() == "model/end")
        .map(|e| e.seq as i64)
        .collect();
    let models = of_class(&els, "tl-model");
    let counted: i64 = models.iter().map(|e| e.count).sum();
    if counted != model_events.len() as i64 {
        problems.push(format!(
            "{root}: {counted} model calls drawn, {} events",
            model_events.len()
        ));
    }
    if models.iter().all(|e| e.count == 1) {
        let mut seqs: Vec<i64> = models.iter().map(|e| e.seq).collect();
        seqs.sort_unstable();
        if seqs != model_events {
            problems.push(format!(
                "{root}: model calls at {seqs:?}, events at {model_events:?}"
            ));
        }
    }
    let voice_events = events
        .iter()
        .filter(|e| {
            matches!(
                runlog_core::event::Voice::of(e.kind.as_str()),
                runlog_core::event::Voice::Assistant
                    | runlog_core::event::Voice::Reasoning
                    | runlog_core::event::Voice::Progress
            )
        })
        .count() as i64;
    let voices: i64 = of_class(&els, "tl-voice").iter().map(|e| e.count).sum();
    if voices != voice_events {
        problems.push(format!(
            "{root}: {voices} voice events drawn, {voice_events} events"
        ));
    }
    // Every element's details are its own: same seq, and the element's kind.
    for e in &els {
        let d = &det[e.i];
        if d["seq"].as_i64() != Some(e.seq) {
            problems.push(format!(
                "{root}: element at seq {} has details of {}",
                e.seq, d["seq"]
            ));
        }
        let kind = d["kind"].as_str().unwrap_or("");
        let want = match e.classes[0].as_str() {
            "tl-turn" => "turn",
            "tl-tool" => "tool call",
            "tl-callback" => "callback",
            "tl-error" => "error",
            "tl-interval" => "interval",
            "tl-run" => "run",
            "tl-model" => "model call",
            "tl-voice" => "events (bin)",
            other => other,
        };
        // An element of a turn carries the turn's state record as of its own cursor.
        if matches!(
            e.classes[0].as_str(),
            "tl-tool" | "tl-callback" | "tl-model"
        ) && d["turn"].is_string()
            && e.count == 1
        {
            let rec = &d["state_record"];
            if rec["cursor"] != Value::String(e.seq.to_string()) || rec["turn_id"] != d["turn"] {
                problems.push(format!(
                    "{root}: {} at seq {}: state record {rec}",
                    e.classes[0], e.seq
                ));
            }
        }
        if !kind.contains(want) {
            problems.push(format!(
                "{root}: a {} element has details of a {kind}",
                e.classes[0]
            ));
        }
    }
    problems
}

fn check_loaded(loaded: &Loaded) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let derived = loaded.derived();
    for a in &loaded.ingested.agents {
        problems.extend(check_agent(&derived, &a.root, &a.events));
    }
    (loaded.ingested.agents.len(), problems)
}

fn golden_cases_draw_every_row_once() {
    let mut problems = Vec::new();
    let mut agents = 0;
    let dirs = crate::golden::case_dirs();
    assert!(!dirs.is_empty());
    for dir in dirs {
        let (inputs, opts) = crate::golden::case_input(&dir).expect("case input");
        let loaded = runlog::pipeline::load(&inputs, &opts).expect("load case");
        let (n, p) = check_loaded(&loaded);
        agents += n;
        problems.extend(p.into_iter().map(|p| format!("{}: {p}", dir.display())));
    }
    assert!(agents > 50, "only {agents} agents in the golden cases");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn gen_log(dir: &Path, agents: u64, seed: u64, anomalies: f64) -> PathBuf {
    let out = dir.join(format!("gen-{seed}.jsonl"));
    let opts = runlog_gen::GenOptions {
        agents,
        seed,
        anomalies,
        ..Default::default()
    };
    runlog_gen::write(&opts, &out).expect("gen");
    out
}

fn generated_log_draws_every_row_once() {
    let tmp = tempfile::tempdir().unwrap();
    let log = gen_log(tmp.path(), 60, 3, 0.15);
    let loaded = runlog::pipeline::load(&[log], &Default::default()).expect("load");
    let (n, problems) = check_loaded(&loaded);
    assert_eq!(n, 60);
    // The generated agents have every kind of element.
    let d = &loaded.derived();
    assert!(!d.tool_calls.is_empty() && !d.errors.is_empty() && !d.callbacks.is_empty());
    assert!(d.intervals.iter().any(|i| i.status != "settled"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// One agent of `intervals` intervals, each a turn with `calls` model calls (deltas and
/// reasoning around each) and a tool call: ~`intervals * (6 + calls * 12)` events.
fn long_agent(intervals: usize, calls: usize) -> String {
    let mut out = String::new();
    let mut seq = 0;
    let mut push = |session: &str, turn: Option<&str>, kind: &str, data: &str| {
        seq += 1;
        let turn = turn.map_or(String::new(), |t| format!(r#","turn":"{t}""#));
        out.push_str(&format!(
            r#"{{"seq":{seq},"ts":"2026-11-03T10:{:02}:{:02}Z","root":"long","session":"{session}"{turn},"type":"{kind}","data":{data}}}"#,
            (seq / 60) % 60,
            seq % 60
        ));
        out.push('\n');
    };
    for k in 0..intervals {
        let t = format!("t{k}");
        push("long", None, "inbox/receipt", "{}");
        push("long", Some(&t), "turn/start", "{}");
        for c in 0..calls {
            for _ in 0..5 {
                push("long", Some(&t), "reasoning/delta", r#"{"text":"hm "}"#);
            }
            for _ in 0..5 {
                push("long", Some(&t), "text/delta", r#"{"text":"word "}"#);
            }
            push("long", Some(&t), "progress", r#"{"message":"working"}"#);
            push(
                "long",
                Some(&t),
                "model/end",
                &format!(
                    r#"{{"usage":{{"input_tokens":{},"output_tokens":7}}}}"#,
                    100 + c
                ),
            );
        }
        push(
            "long",
            Some(&t),
            "tool/call",
            &format!(r#"{{"call_id":"c{k}","name":"search","arguments":{{"q":"x"}}}}"#),
        );
        push(
            "long",
            Some(&t),
            "tool/result",
            &format!(r#"{{"call_id":"c{k}","status":"ok"}}"#),
        );
        push(
            "long",
            Some(&t),
            "turn/end",
            r#"{"reason":{"kind":"completed","stop_reason":"end_turn"},"text":"done"}"#,
        );
        push("long", None, "agent/idle", "{}");
    }
    out
}

fn long_agent_bins_model_calls_and_stays_small() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("long.jsonl");
    // 100 intervals × 25 calls: 2,500 model calls (past the marks budget), ~30,600 events.
    std::fs::write(&log, long_agent(100, 25)).unwrap();
    let loaded = runlog::pipeline::load(&[log], &Default::default()).expect("load");
    let a = &loaded.ingested.agents[0];
    assert!(a.events.len() > 30_000, "{} events", a.events.len());
    let problems = check_agent(&loaded.derived(), &a.root, &a.events);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let html = render_page(&build(&a.root, &a.events), &PageOptions::default());
    assert!(html.len() < 5_000_000, "page of {} bytes", html.len());
    let els = elements(&html);
    let bins = of_class(&els, "tl-bin");
    assert!(
        !bins.is_empty() && bins.len() < 2_500,
        "{} model bins",
        bins.len()
    );
    assert!(
        html.contains("model calls are more than"),
        "the page says it binned"
    );
}

fn page_file_names_are_safe_and_distinct() {
    let roots = [
        "plain-1",
        "with/slash",
        "with\\back",
        "dots..",
        "..",
        "sp ace",
        "uni-é",
        "under_score",
        "under_5Fscore",
        "",
        &"x".repeat(300),
        &format!("{}y", "x".repeat(300)),
    ];
    let names: BTreeSet<String> = roots.iter().map(|r| page_file_name(r)).collect();
    assert_eq!(names.len(), roots.len(), "{names:?}");
    for n in &names {
        assert!(!n.is_empty() && n.len() <= 120, "{n}");
        assert!(
            n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{n}"
        );
    }
    assert_eq!(page_file_name("plain-1"), "plain-1");
}

fn runlog_bin(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(args)
        .output()
        .expect("run runlog");
    assert!(
        out.status.success(),
        "runlog {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The roots the tables make notable, computed from the rows themselves.
fn notable_roots(d: &Derived) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for i in &d.intervals {
        if i.status != "settled" {
            s.insert(i.root.to_string());
        }
    }
    for t in &d.turns {
        if t.protocol_error.is_some() || t.state == Some("Failed") {
            s.insert(t.root.to_string());
        }
    }
    for r in &d.runs {
        if r.provisional_tail {
            s.insert(r.root.to_string());
        }
    }
    for e in &d.errors {
        if e.retryable_mismatch == Some(true) {
            s.insert(e.root.to_string());
        }
    }
    s
}

/// The agent links of an index page: (href, root).
fn links(index: &str) -> Vec<(String, String)> {
    index
        .split(r#"<a class="agent-link" "#)
        .skip(1)
        .map(|p| {
            let href = between(p, "href=\"", "\"").to_string();
            let root = unescape(between(p, ">", "</a>"));
            (href, root)
        })
        .collect()
}

fn html_dir_links_every_notable_agent_up_to_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let log = gen_log(tmp.path(), 150, 11, 0.08);
    let loaded =
        runlog::pipeline::load(std::slice::from_ref(&log), &Default::default()).expect("load");
    let want = notable_roots(&loaded.derived());
    assert!(want.len() > 8, "only {} notable agents", want.len());
    let log = log.to_str().unwrap();

    // No cap reached: every notable agent is linked, each page exists and links back.
    let dir = tmp.path().join("all");
    runlog_bin(&[
        "report",
        log,
        "--html-dir",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let got = links(&index);
    let roots: BTreeSet<String> = got.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(roots, want);
    assert_eq!(got.len(), want.len(), "each agent linked once");
    assert!(
        index.contains(r#"data-section="finish_reasons""#),
        "the report is there"
    );
    for (href, root) in &got {
        let page =
            std::fs::read_to_string(dir.join(href)).unwrap_or_else(|e| panic!("{href}: {e}"));
        assert!(
            page.contains(r#"href="../index.html#s-notable""#),
            "{href} links back"
        );
        assert!(page.contains(&format!("<code>{}</code>", runlog::html::escape(root))));
    }

    // A cap of 5: the five most serious are linked, and the page says where it cut.
    let dir = tmp.path().join("five");
    runlog_bin(&[
        "report",
        log,
        "--html-dir",
        dir.to_str().unwrap(),
        "--max-pages",
        "5",
        "--quiet",
    ]);
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let got = links(&index);
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|(_, r)| want.contains(r)));
    assert!(
        index.contains(&format!("{} notable agents; timeline pages for the first 5 (the cap, --max-pages 5); {} more have none.", want.len(), want.len() - 5)),
        "the cap is stated"
    );
    assert_eq!(std::fs::read_dir(dir.join("agents")).unwrap().count(), 5);
}

fn replay_html_writes_the_page_from_logs_and_from_a_warehouse() {
    let tmp = tempfile::tempdir().unwrap();
    let log = gen_log(tmp.path(), 5, 2, 0.0);
    let loaded =
        runlog::pipeline::load(std::slice::from_ref(&log), &Default::default()).expect("load");
    let root = loaded.ingested.agents[0].root.to_string();
    let (log, wh) = (log.to_str().unwrap(), tmp.path().join("wh"));
    let from_logs = tmp.path().join("a.html");
    runlog_bin(&[
        "replay",
        log,
        "--root",
        &root,
        "--html",
        from_logs.to_str().unwrap(),
    ]);
    runlog_bin(&["ingest", log, "--warehouse", wh.to_str().unwrap()]);
    let from_wh = tmp.path().join("b.html");
    runlog_bin(&[
        "replay",
        "--warehouse",
        wh.to_str().unwrap(),
        "--root",
        &root,
        "--html",
        from_wh.to_str().unwrap(),
    ]);
    let (a, b) = (
        std::fs::read_to_string(&from_logs).unwrap(),
        std::fs::read_to_string(&from_wh).unwrap(),
    );
    assert_eq!(a, b, "the same page from logs and from their warehouse");
    let a_els = elements(&a);
    assert_eq!(
        of_class(&a_els, "tl-turn").len(),
        loaded
            .derived()
            .turns
            .iter()
            .filter(|t| t.root.as_str() == root)
            .count()
    );
    assert!(
        !a.contains("<link") && !a.contains(" src="),
        "nothing loaded from elsewhere"
    );
}

fn strings_from_the_log_cannot_break_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("evil.jsonl");
    let root = r#"r<b>\"&'"#;
    let lines = [
        r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"ROOT","session":"ROOT","type":"inbox/receipt","data":{}}"#,
        r#"{"seq":2,"ts":"2026-11-03T10:00:01Z","root":"ROOT","session":"ROOT","turn":"<i>t","type":"turn/start","data":{}}"#,
        r#"{"seq":3,"ts":"2026-11-03T10:00:02Z","root":"ROOT","session":"ROOT","turn":"<i>t","type":"tool/call","data":{"call_id":"c","name":"</script><b>x</b>","arguments":{"q":"</script>"}}}"#,
        r#"{"seq":4,"ts":"2026-11-03T10:00:03Z","root":"ROOT","session":"ROOT","turn":"<i>t","type":"turn/end","data":{"reason":{"kind":"completed"},"text":"<!-- </script>"}}"#,
    ];
    let text: String = lines
        .iter()
        .map(|l| l.replace("ROOT", root) + "\n")
        .collect();
    std::fs::write(&log, text).unwrap();
    let loaded = runlog::pipeline::load(&[log], &Default::default()).expect("load");
    let a = &loaded.ingested.agents[0];
    let html = render_page(&build(&a.root, &a.events), &PageOptions::default());
    assert!(
        !html.contains("<b>x") && !html.contains("<i>t"),
        "data is escaped"
    );
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's scripts end"
    );
    let det = details(&html);
    let tool = det.iter().find(|d| d["kind"] == "tool call").expect("tool");
    assert_eq!(tool["name"], "</script><b>x</b>");
    assert!(check_agent(&loaded.derived(), &a.root, &a.events).is_empty());
}

fn many_tool_calls_are_binned_and_the_page_stays_under_5_mb() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("tools.jsonl");
    let mut text = String::new();
    let mut seq = 0;
    let mut line = |kind: &str, data: &str| {
        seq += 1;
        text.push_str(&format!(
            r#"{{"seq":{seq},"ts":"2026-11-03T10:00:00Z","root":"t","session":"t","turn":"a","type":"{kind}","data":{data}}}"#
        ));
        text.push('\n');
    };
    line("turn/start", "{}");
    for k in 0..6000 {
        let call = format!(
            r#"{{"call_id":"c{k}","name":"grep","arguments":{{"q":"{}"}}}}"#,
            "x".repeat(200)
        );
        line("tool/call", &call);
        let status = if k % 10 == 0 { "error" } else { "ok" };
        line(
            "tool/result",
            &format!(r#"{{"call_id":"c{k}","status":"{status}"}}"#),
        );
    }
    line("turn/end", r#"{"reason":{"kind":"completed"}}"#);
    std::fs::write(&log, text).unwrap();
    let loaded = runlog::pipeline::load(&[log], &Default::default()).expect("load");
    let a = &loaded.ingested.agents[0];
    let problems = check_agent(&loaded.derived(), &a.root, &a.events);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let html = render_page(&build(&a.root, &a.events), &PageOptions::default());
    assert!(html.len() < 5_000_000, "page of {} bytes", html.len());
    let els = elements(&html);
    let bins = of_class(&els, "tl-tool");
    assert!(bins.iter().all(|e| e.classes.iter().any(|c| c == "tl-bin")));
    assert!(bins.len() < 6000, "{} bins", bins.len());
    assert!(
        html.contains("tool calls are more than 5000"),
        "the page says it binned"
    );
}

trials! {
    golden_cases_draw_every_row_once,
    generated_log_draws_every_row_once,
    long_agent_bins_model_calls_and_stays_small,
    page_file_names_are_safe_and_distinct,
    html_dir_links_every_notable_agent_up_to_the_cap,
    replay_html_writes_the_page_from_logs_and_from_a_warehouse,
    strings_from_the_log_cannot_break_the_page,
    many_tool_calls_are_binned_and_the_page_stays_under_5_mb,
}
