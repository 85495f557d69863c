//! `runlog export` end to end: the traces of `sample-logs/` read back by runlog's own OTLP
//! importer give the same turns, model calls, finish reasons, token totals and error codes
//! as the warehouse they came from (both sides computed by queries); two exports are
//! byte-identical; `--root`, `--content` and `--since` select what they say; an endpoint is
//! posted protobuf it can decode, retried on 503 and refused with its status and body.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

fn runlog(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(args)
        .output()
        .expect("run runlog");
    out
}

fn ok(args: &[&str]) -> String {
    let out = runlog(args);
    assert!(
        out.status.success(),
        "runlog {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn samples() -> String {
    format!("{}/sample-logs", env!("CARGO_MANIFEST_DIR"))
}

/// The rows of a query over a warehouse, as CSV lines (header first).
fn query(wh: &Path, sql: &str) -> Vec<String> {
    ok(&[
        "query",
        "--warehouse",
        wh.to_str().unwrap(),
        "--format",
        "csv",
        sql,
    ])
    .lines()
    .map(str::to_string)
    .collect()
}

/// One number a query answers.
fn number(wh: &Path, sql: &str) -> i64 {
    query(wh, sql)
        .get(1)
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("{sql} gave no number"))
}

/// `code,n` rows of errors of one source, as a map.
fn codes(wh: &Path, source: &str) -> BTreeMap<String, i64> {
    query(
        wh,
        &format!("SELECT code, count(*) AS n FROM errors WHERE source = '{source}' GROUP BY code"),
    )
    .iter()
    .skip(1)
    .filter_map(|l| l.rsplit_once(','))
    .map(|(c, n)| (c.to_string(), n.parse().unwrap()))
    .collect()
}

/// Every span of an OTLP/JSON lines file.
fn spans(file: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for rs in v["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                out.extend(ss["spans"].as_array().unwrap().iter().cloned());
            }
        }
    }
    out
}

/// A span's attribute as a string, number or bool rendered as text.
fn attr(span: &serde_json::Value, key: &str) -> Option<String> {
    let kv = span["attributes"]
        .as_array()?
        .iter()
        .find(|kv| kv["key"] == key)?;
    let v = &kv["value"];
    ["stringValue", "intValue", "boolValue"]
        .iter()
        .find_map(|k| v.get(*k))
        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
}

/// Error codes as runlog's OTLP importer reads them back: canonical codes stay, a provider's
/// own code is translated, so only the canonical ones are compared one by one; the others'
/// count must reappear as extra canonical ones.
fn assert_codes_survive(what: &str, before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) {
    let canonical = |c: &str| runlog_core::reduce::rules::KNOWN_CODES.contains(&c);
    let total = |m: &BTreeMap<String, i64>| m.values().sum::<i64>();
    assert_eq!(
        total(before),
        total(after),
        "{what}: {before:?} vs {after:?}"
    );
    let mut extra = 0;
    for (code, n) in before.iter().filter(|(c, _)| canonical(c)) {
        let m = after.get(code).copied().unwrap_or(0);
        assert!(m >= *n, "{what}: {code} {n} became {m}");
        extra += m - n;
    }
    let translated: i64 = before
        .iter()
        .filter(|(c, _)| !canonical(c))
        .map(|(_, n)| n)
        .sum();
    assert!(extra <= translated, "{what}: {before:?} vs {after:?}");
}

fn round_trip_through_runlogs_otlp_importer() {
    let dir = tempfile::tempdir().unwrap();
    let (wh1, wh2) = (dir.path().join("wh1"), dir.path().join("wh2"));
    let file = dir.path().join("traces.jsonl");
    ok(&["ingest", &samples(), "--warehouse", wh1.to_str().unwrap()]);
    ok(&[
        "export",
        "--warehouse",
        wh1.to_str().unwrap(),
        "--out",
        file.to_str().unwrap(),
        "--batch-spans",
        "300",
    ]);
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    assert!(
        lines > 1,
        "batches of 300 spans give several lines, got {lines}"
    );
    ok(&[
        "ingest",
        file.to_str().unwrap(),
        "--warehouse",
        wh2.to_str().unwrap(),
    ]);
    assert_eq!(
        query(&wh2, "SELECT DISTINCT format FROM files")[1..],
        ["otlp".to_string()]
    );

    // Turns: every root-session turn is one root invocation again; a turn whose only work
    // is a subagent's turn reads back as a container around it (no turn of its own).
    let roots = "SELECT count(*) FROM turns WHERE is_root";
    assert_eq!(number(&wh1, roots), number(&wh2, roots));
    let containers = number(
        &wh1,
        "SELECT count(DISTINCT concat(t.root, '/', t.session, '/', t.turn)) FROM turns t
         JOIN events e ON e.root = t.root AND e.type = 'session/start'
         WHERE t.model_calls = 0 AND t.tool_calls = 0
           AND strpos(e.data, concat('\"parent_turn\":\"', t.turn, '\"')) > 0
           AND strpos(e.data, concat('\"parent\":\"', t.session, '\"')) > 0",
    );
    let turns = "SELECT count(*) FROM turns";
    assert_eq!(number(&wh1, turns) - containers, number(&wh2, turns));
    assert_eq!(
        number(&wh1, "SELECT count(*) FROM turns WHERE state = 'Failed'"),
        number(&wh2, "SELECT count(*) FROM turns WHERE state = 'Failed'")
    );

    // Model calls, their finish reasons and token totals, tool calls.
    for sql in [
        "SELECT sum(model_calls) FROM turns",
        "SELECT sum(input_tokens) FROM turns",
        "SELECT sum(output_tokens) FROM turns",
        "SELECT sum(tool_calls) FROM turns",
        "SELECT count(*) FROM tool_calls WHERE turn IS NOT NULL",
    ] {
        assert_eq!(number(&wh1, sql), number(&wh2, sql), "{sql}");
    }
    let finish = "SELECT regexp_match(data, '\"finish_reason\"\\s*:\\s*\"([^\"]*)\"')[1] AS fr,
                         count(*) AS n
                  FROM events WHERE type = 'model/end' GROUP BY 1 ORDER BY 1";
    assert!(
        query(&wh1, finish).len() > 2,
        "the samples have finish reasons"
    );
    assert_eq!(query(&wh1, finish), query(&wh2, finish));
    let tools = "SELECT name, count(*) AS n FROM tool_calls WHERE turn IS NOT NULL
                 GROUP BY name ORDER BY name";
    assert_eq!(query(&wh1, tools), query(&wh2, tools));

    // Error codes: model errors, and the failed turns' own errors.
    assert_codes_survive("model errors", &codes(&wh1, "model"), &codes(&wh2, "model"));
    assert_codes_survive("turn errors", &codes(&wh1, "turn"), &codes(&wh2, "turn"));

    // What the importer cannot carry back is in the attributes: every turn's state.
    let mut states: BTreeMap<String, i64> = BTreeMap::new();
    for s in spans(&file) {
        if let Some(st) = attr(&s, "runlog.turn.state") {
            *states.entry(st).or_default() += 1;
        }
    }
    let mut want: BTreeMap<String, i64> = BTreeMap::new();
    for l in query(
        &wh1,
        "SELECT coalesce(state, 'protocol_error') AS s, count(*) FROM turns GROUP BY 1",
    )
    .iter()
    .skip(1)
    {
        let (s, n) = l.rsplit_once(',').unwrap();
        let s = if s == "UnknownOutcome" {
            "unknown_outcome".to_string()
        } else {
            s.to_lowercase()
        };
        want.insert(s, n.parse().unwrap());
    }
    assert_eq!(states, want);
}

fn exporting_twice_gives_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    ok(&["ingest", &samples(), "--warehouse", wh.to_str().unwrap()]);
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    ok(&[
        "export",
        "--warehouse",
        wh.to_str().unwrap(),
        "--out",
        a.to_str().unwrap(),
    ]);
    ok(&[
        "export",
        "--warehouse",
        wh.to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
    ]);
    ok(&["export", &samples(), "--out", c.to_str().unwrap(), "-q"]);
    let a = std::fs::read(&a).unwrap();
    assert!(!a.is_empty());
    assert!(
        a == std::fs::read(&b).unwrap(),
        "two exports of one warehouse differ"
    );
    assert!(
        a == std::fs::read(&c).unwrap(),
        "the warehouse and its logs export differently"
    );
}

fn root_content_and_window_select_what_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let w = wh.to_str().unwrap();
    ok(&["ingest", &samples(), "--warehouse", w]);
    let f = dir.path().join("t.jsonl");
    let fs = f.to_str().unwrap();

    ok(&[
        "export",
        "--warehouse",
        w,
        "--root",
        "demo-tree",
        "--out",
        fs,
        "-q",
    ]);
    let plain = spans(&f);
    assert!(!plain.is_empty());
    assert!(plain
        .iter()
        .all(|s| attr(s, "gen_ai.conversation.id").as_deref() == Some("demo-tree")));
    let turns = number(&wh, "SELECT count(*) FROM turns WHERE root = 'demo-tree'");
    let agent_spans = plain
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name").as_deref() == Some("invoke_agent"));
    assert_eq!(agent_spans.count() as i64, turns);
    assert!(plain
        .iter()
        .all(|s| attr(s, "gen_ai.output.messages").is_none()
            && attr(s, "gen_ai.tool.call.arguments").is_none()));

    ok(&[
        "export",
        "--warehouse",
        w,
        "--root",
        "demo-tree",
        "--content",
        "--out",
        fs,
        "-q",
    ]);
    let content = spans(&f);
    assert_eq!(content.len(), plain.len());
    let texts: Vec<String> = content
        .iter()
        .filter_map(|s| attr(s, "output.value"))
        .collect();
    assert!(texts.iter().any(|t| t == "Summary ready"), "{texts:?}");
    assert!(content
        .iter()
        .any(|s| attr(s, "gen_ai.tool.call.arguments").is_some()));

    // A window keeps the turns that started in it.
    let mid = number(
        &wh,
        "SELECT CAST(min(ts) AS BIGINT) + (CAST(max(ts) AS BIGINT) - CAST(min(ts) AS BIGINT)) / 2
         FROM events",
    );
    let since = chrono::DateTime::from_timestamp_micros(mid)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    ok(&[
        "export",
        "--warehouse",
        w,
        "--since",
        &since,
        "--out",
        fs,
        "-q",
    ]);
    let windowed = spans(&f)
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name").as_deref() == Some("invoke_agent"))
        .count() as i64;
    let want: i64 = ok(&[
        "query",
        "--warehouse",
        w,
        "--since",
        &since,
        "--format",
        "csv",
        "SELECT count(*) FROM turns",
    ])
    .lines()
    .nth(1)
    .unwrap()
    .parse()
    .unwrap();
    assert!(want > 0 && want < turns_total(&wh));
    assert_eq!(windowed, want);
}

fn turns_total(wh: &Path) -> i64 {
    number(wh, "SELECT count(*) FROM turns")
}

/// An HTTP request received: its head's lines and its body.
type Request = (Vec<String>, Vec<u8>);

/// Reads one HTTP request.
fn read_request(r: &mut BufReader<std::net::TcpStream>) -> Request {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let line = line.trim_end().to_string();
        if line.is_empty() {
            break;
        }
        head.push(line);
    }
    let len: usize = head
        .iter()
        .find_map(|h| {
            h.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (head, body)
}

/// A server answering each request with the next of `answers` (status, extra header, body),
/// returning what it received.
fn serve(
    answers: Vec<(u16, &'static str, &'static str)>,
) -> (String, std::thread::JoinHandle<Vec<Request>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut got = Vec::new();
        for (status, header, body) in answers {
            let (stream, _) = listener.accept().unwrap();
            let mut r = BufReader::new(stream.try_clone().unwrap());
            got.push(read_request(&mut r));
            let mut w = stream;
            write!(
                w,
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n{header}\r\n{body}",
                body.len()
            )
            .unwrap();
            w.flush().unwrap();
        }
        got
    });
    (url, handle)
}

fn endpoint_gets_protobuf_retries_503_and_reports_a_refusal() {
    let logs = format!("{}/handwritten/tree.jsonl", samples());
    let (url, server) = serve(vec![(503, "Retry-After: 0\r\n", "busy"), (200, "", "")]);
    let out = runlog(&["export", &logs, "--endpoint", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 retries"), "{err}");
    let got = server.join().unwrap();
    assert_eq!(got.len(), 2);
    let (head, body) = &got[1];
    assert!(head[0].starts_with("POST /v1/traces "), "{head:?}");
    assert!(head
        .iter()
        .any(|h| h.eq_ignore_ascii_case("content-type: application/x-protobuf")));
    let req = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
    let n: usize = req
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.jsonl");
    ok(&["export", &logs, "--out", f.to_str().unwrap(), "-q"]);
    assert_eq!(n, spans(&f).len());
    assert!(got[0].1 == *body, "the retry posts the same body");

    let (url, server) = serve(vec![(400, "", "bad spans: no trace id")]);
    let out = runlog(&["export", &logs, "--endpoint", &url]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP 400") && err.contains("bad spans: no trace id"),
        "{err}"
    );
    server.join().unwrap();
}

trials! {
    round_trip_through_runlogs_otlp_importer,
    exporting_twice_gives_identical_bytes,
    root_content_and_window_select_what_they_say,
    endpoint_gets_protobuf_retries_503_and_reports_a_refusal,
}
