//! `runlog collect`, the OTLP/HTTP receiver, as a process: the binary is started on a free
//! loopback port and real OTLP bodies (the Pydantic AI sample under `tests/samples/otlp/`,
//! as protobuf and as JSON) are posted to it over plain TCP. Checks: the tables equal a
//! file ingest of the same spans sent in several requests; refused requests (malformed,
//! oversized, unauthenticated) write nothing; rejected spans are counted in the partial
//! success; and after `kill -9` in the middle of concurrent exports every span of every
//! request answered 200 is in the warehouse, a request sent again adding nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value;
use prost::Message;

fn sample_lines() -> Vec<String> {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples/otlp/pydantic_ai_agents.jsonl");
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn request_of(line: &str) -> ExportTraceServiceRequest {
    serde_json::from_str(line).unwrap()
}

/// A receiver started by a test; killed when dropped.
struct Receiver {
    child: Child,
    addr: String,
    stderr: PathBuf,
}

impl Receiver {
    fn start(warehouse: &Path, extra: &[&str]) -> Receiver {
        let stderr = unique(warehouse.with_extension("stderr"));
        let child = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args([
                "collect",
                "--listen",
                "127.0.0.1:0",
                "--flush-secs",
                "0.05",
                "-w",
            ])
            .arg(warehouse)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut r = Receiver {
            child,
            addr: String::new(),
            stderr,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(&r.stderr).unwrap_or_default();
            if let Some(rest) = text.split("listening on http://").nth(1) {
                r.addr = rest.split_whitespace().next().unwrap().to_string();
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "the receiver did not start: {text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    }

    /// SIGTERM, and the exit status and stderr.
    fn stop(mut self) -> (bool, String) {
        self.signal("-TERM");
        let status = self.child.wait().unwrap();
        (
            status.success(),
            std::fs::read_to_string(&self.stderr).unwrap(),
        )
    }

    fn kill9(mut self) {
        self.signal("-KILL");
        let _ = self.child.wait();
    }

    fn post(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
        post(&self.addr, path, headers, body)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unique(p: PathBuf) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    p.with_extension(format!("stderr{n}"))
}

/// One HTTP/1.1 request on its own connection: the status and the body of the answer.
fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    try_post(addr, path, headers, body).expect("the receiver answers")
}

fn try_post(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    // A receiver that refuses early may close before reading the whole body.
    let _ = s.write_all(body);
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no answer"))?;
    let status = std::str::from_utf8(&answer[..split])
        .ok()
        .and_then(|h| h.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status"))?;
    Ok((status, answer[split + 4..].to_vec()))
}

const PROTOBUF: (&str, &str) = ("Content-Type", "application/x-protobuf");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn query(warehouse: &Path, sql: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["query", "--format", "csv", "-w"])
        .arg(warehouse)
        .arg(sql)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The warehouse's versions and the spool's files with their sizes: what a refused
/// request must leave as it was.
fn written_state(warehouse: &Path) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    for sub in ["_log", "_collect"] {
        for e in std::fs::read_dir(warehouse.join(sub)).unwrap() {
            let e = e.unwrap();
            v.push((
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            ));
        }
    }
    v.sort();
    v
}

const TABLES_SQL: [&str; 2] = [
    "SELECT root, status, finish_reason, turns, model_calls, errors, tool_calls, \
     input_tokens, output_tokens FROM intervals ORDER BY root, open_seq",
    "SELECT root, session, state, stop_reason, error_code, tool_calls, model_calls, \
     input_tokens, output_tokens FROM turns ORDER BY root, session, start_seq",
];

/// The sample's seven lines sent as seven requests (protobuf, JSON, gzipped JSON in turn):
/// the tables are those of ingesting the file, though its traces' spans are split over
/// requests; sending them all again changes nothing.
fn requests_fill_the_tables_a_file_ingest_gives() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let r = Receiver::start(&wh, &[]);
    let send_all = || {
        for (i, line) in sample_lines().iter().enumerate() {
            let (status, body) = match i % 3 {
                0 => r.post("/v1/traces", &[PROTOBUF], &request_of(line).encode_to_vec()),
                1 => r.post("/v1/traces", &[JSON], line.as_bytes()),
                _ => {
                    let mut gz =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    gz.write_all(line.as_bytes()).unwrap();
                    let body = gz.finish().unwrap();
                    r.post("/v1/traces", &[JSON, ("Content-Encoding", "gzip")], &body)
                }
            };
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        }
    };
    send_all();
    let first: Vec<String> = TABLES_SQL.iter().map(|q| query(&wh, q)).collect();
    let events = query(&wh, "SELECT count(*) FROM events");
    send_all();
    let (ok, stderr) = r.stop();
    assert!(ok, "{stderr}");
    assert!(stderr.contains("28 spans"), "{stderr}");
    assert!(stderr.contains("28 duplicates"), "{stderr}");
    assert_eq!(query(&wh, "SELECT count(*) FROM events"), events);
    let file_wh = dir.path().join("file-wh");
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples/otlp/pydantic_ai_agents.jsonl");
    let st = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["ingest", "-q", "-w"])
        .arg(&file_wh)
        .arg(&sample)
        .status()
        .unwrap();
    assert!(st.success());
    for (q, got) in TABLES_SQL.iter().zip(&first) {
        let want = query(&file_wh, q);
        assert!(want.lines().count() > 5, "{want}");
        assert_eq!(got, &want, "{q}");
        assert_eq!(
            &query(&wh, q),
            got,
            "after the requests were sent again: {q}"
        );
    }
}

/// A request that must be refused: path, headers, body, the status, a word of the answer.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>, u16, &'a str);

/// Malformed bodies are 400 with a message, another media type 415, a wrong path 404;
/// none of them writes anything, nor does a second receiver started on the warehouse.
fn malformed_bodies_are_400_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let r = Receiver::start(&wh, &[]);
    let line = &sample_lines()[0];
    assert_eq!(r.post("/v1/traces", &[JSON], line.as_bytes()).0, 200);
    let before = written_state(&wh);
    let proto = request_of(line).encode_to_vec();
    let cases: Vec<Case> = vec![
        (
            "/v1/traces",
            vec![JSON],
            b"{\"resourceSpans\": [".to_vec(),
            400,
            "OTLP/JSON",
        ),
        (
            "/v1/traces",
            vec![JSON],
            b"{\"resourceSpans\": 7}".to_vec(),
            400,
            "OTLP/JSON",
        ),
        (
            "/v1/traces",
            vec![PROTOBUF],
            proto[..proto.len() / 2].to_vec(),
            400,
            "protobuf",
        ),
        ("/v1/logs", vec![PROTOBUF], vec![0xff; 64], 400, "protobuf"),
        (
            "/v1/traces",
            vec![JSON, ("Content-Encoding", "gzip")],
            line.as_bytes().to_vec(),
            400,
            "gzip",
        ),
        (
            "/v1/traces",
            vec![("Content-Type", "text/plain")],
            line.as_bytes().to_vec(),
            415,
            "Content-Type",
        ),
        (
            "/v1/metrics",
            vec![JSON],
            line.as_bytes().to_vec(),
            404,
            "/v1/traces",
        ),
    ];
    for (path, headers, body, want, says) in cases {
        let (status, answer) = r.post(path, &headers, &body);
        let text = String::from_utf8_lossy(&answer);
        assert_eq!(status, want, "{path} {headers:?}: {text}");
        assert!(text.contains(says), "{text}");
    }
    // A second receiver on the same warehouse is refused.
    let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["collect", "--listen", "127.0.0.1:0", "-w"])
        .arg(&wh)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("another runlog collect"), "{stderr}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(written_state(&wh), before);
    let (ok, stderr) = r.stop();
    assert!(ok, "{stderr}");
    assert_eq!(written_state(&wh), before);
}

/// A body over --max-body is 413, by its Content-Length or once gunzipped, and writes
/// nothing; one under it is taken.
fn oversized_bodies_are_413() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let lines = sample_lines();
    let small = lines.iter().map(|l| l.len()).min().unwrap();
    let limit = small + 10;
    let r = Receiver::start(&wh, &["--max-body", &limit.to_string()]);
    let before = written_state(&wh);
    let big = lines.iter().find(|l| l.len() > limit * 2).unwrap();
    let (status, answer) = r.post("/v1/traces", &[JSON], big.as_bytes());
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&answer));
    assert!(String::from_utf8_lossy(&answer).contains("--max-body"));
    // Small once compressed, over the limit once gunzipped.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(big.as_bytes()).unwrap();
    let body = gz.finish().unwrap();
    assert!(body.len() <= limit);
    let (status, answer) = r.post("/v1/traces", &[JSON, ("Content-Encoding", "gzip")], &body);
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&answer));
    assert!(String::from_utf8_lossy(&answer).contains("gunzipped"));
    assert_eq!(written_state(&wh), before);
    let line = lines.iter().find(|l| l.len() <= limit).unwrap();
    assert_eq!(r.post("/v1/traces", &[JSON], line.as_bytes()).0, 200);
    assert_ne!(written_state(&wh), before);
    assert!(r.stop().0);
}

/// With --token, a request without the bearer token or with another is 401 and writes
/// nothing; listening beyond loopback without a token is refused at start.
fn a_token_is_required_when_set_and_beyond_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let r = Receiver::start(&wh, &["--token", "s3cret"]);
    let before = written_state(&wh);
    let body = sample_lines()[0].clone();
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("s3cret"),
        Some("Basic s3cret"),
    ] {
        let mut headers = vec![JSON];
        if let Some(a) = auth {
            headers.push(("Authorization", a));
        }
        let (status, answer) = r.post("/v1/traces", &headers, body.as_bytes());
        assert_eq!(
            status,
            401,
            "{auth:?}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
    assert_eq!(written_state(&wh), before);
    let ok = r.post(
        "/v1/traces",
        &[JSON, ("Authorization", "Bearer s3cret")],
        body.as_bytes(),
    );
    assert_eq!(ok.0, 200);
    assert!(r.stop().0);

    let open = dir.path().join("open");
    let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["collect", "--listen", "0.0.0.0:0", "-w"])
        .arg(&open)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("--token"), "{stderr}");
    assert!(
        !open.exists(),
        "nothing is written when the start is refused"
    );
}

/// Spans with invalid ids are rejected and counted in the answer's partial success; the
/// others of the request are kept.
fn rejected_spans_are_a_partial_success() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let r = Receiver::start(&wh, &[]);
    let mut req = request_of(&sample_lines()[0]);
    let mut spans: Vec<_> = req.resource_spans[0].scope_spans[0]
        .spans
        .iter_mut()
        .collect();
    let total = spans.len();
    assert!(total >= 2);
    let bad_id = hex(&spans[0].span_id);
    let good_id = hex(&spans[1].span_id);
    spans[0].trace_id = vec![0; 16];
    let (status, answer) = r.post("/v1/traces", &[PROTOBUF], &req.encode_to_vec());
    assert_eq!(status, 200);
    let resp = ExportTraceServiceResponse::decode(&answer[..]).unwrap();
    let partial = resp.partial_success.expect("a partial success");
    assert_eq!(partial.rejected_spans, 1);
    assert!(
        partial.error_message.contains("trace id"),
        "{}",
        partial.error_message
    );
    // Fully accepted: no partial success.
    let (status, answer) = r.post(
        "/v1/traces",
        &[PROTOBUF],
        &request_of(&sample_lines()[1]).encode_to_vec(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        ExportTraceServiceResponse::decode(&answer[..])
            .unwrap()
            .partial_success,
        None
    );
    assert!(r.stop().0);
    let data = query(&wh, "SELECT data FROM events");
    assert!(data.contains(&good_id));
    assert!(!data.contains(&bad_id));
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A request's protobuf body and the ids of its spans (hex).
type Body = (Vec<u8>, Vec<String>);

/// The sample's request `line`, made distinct for `round`: trace and span ids and
/// conversation ids changed the same way in every line of a round.
fn round_body(line: &str, round: u32) -> (Vec<u8>, Vec<String>) {
    let mut req = request_of(line);
    let mut ids = Vec::new();
    let mark = |id: &mut Vec<u8>| {
        if id.len() >= 4 {
            for (b, r) in id.iter_mut().zip(round.to_be_bytes()) {
                *b ^= r;
            }
        }
    };
    for rs in &mut req.resource_spans {
        for ss in &mut rs.scope_spans {
            for s in &mut ss.spans {
                mark(&mut s.trace_id);
                mark(&mut s.span_id);
                mark(&mut s.parent_span_id);
                ids.push(hex(&s.span_id));
                for kv in &mut s.attributes {
                    if kv.key == "gen_ai.conversation.id" {
                        if let Some(any_value::Value::StringValue(v)) =
                            kv.value.as_mut().and_then(|v| v.value.as_mut())
                        {
                            v.push_str(&format!("-{round}"));
                        }
                    }
                }
            }
        }
    }
    (req.encode_to_vec(), ids)
}

/// Four exporters post distinct rounds of the sample; the receiver is killed with SIGKILL
/// in the middle. After a restart (which commits what the spool held), every span of every
/// request that was answered 200 is in the warehouse; sending an acknowledged request
/// again adds no event.
fn kill_9_loses_no_acknowledged_span() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let r = Receiver::start(&wh, &[]);
    let lines = sample_lines();
    let acked: Arc<Mutex<Vec<Body>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let exporters: Vec<_> = (0..4u32)
        .map(|t| {
            let (addr, lines, acked, done) =
                (r.addr.clone(), lines.clone(), acked.clone(), done.clone());
            std::thread::spawn(move || {
                let mut round = t * 100_000 + 1;
                while !done.load(Ordering::SeqCst) {
                    for line in &lines {
                        let (body, ids) = round_body(line, round);
                        match try_post(&addr, "/v1/traces", &[PROTOBUF], &body) {
                            Ok((200, _)) => acked.lock().unwrap().push((body, ids)),
                            Ok((s, b)) => panic!("{s}: {}", String::from_utf8_lossy(&b)),
                            // Killed: no answer, nothing acknowledged.
                            Err(_) => return,
                        }
                    }
                    round += 1;
                }
            })
        })
        .collect();
    let start = Instant::now();
    while acked.lock().unwrap().len() < 40 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    r.kill9();
    done.store(true, Ordering::SeqCst);
    for e in exporters {
        e.join().unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert!(acked.len() >= 40, "{} requests acknowledged", acked.len());

    let r = Receiver::start(&wh, &[]);
    let events = query(&wh, "SELECT count(*) FROM events");
    let data = query(&wh, "SELECT data FROM events");
    let missing: Vec<&String> = acked
        .iter()
        .flat_map(|(_, ids)| ids)
        .filter(|id| !data.contains(id.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged spans missing: {missing:?}",
        missing.len()
    );
    // An exporter retrying an acknowledged request adds nothing.
    assert_eq!(r.post("/v1/traces", &[PROTOBUF], &acked[0].0).0, 200);
    let (ok, stderr) = r.stop();
    assert!(ok, "{stderr}");
    assert_eq!(query(&wh, "SELECT count(*) FROM events"), events);
}

/// A warehouse holding tables of other inputs is refused (each commit replaces the tables
/// with the spool's), and left as it was.
fn a_warehouse_of_other_inputs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples/otlp/openai_agents.jsonl");
    let st = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["ingest", "-q", "-w"])
        .arg(&wh)
        .arg(&sample)
        .status()
        .unwrap();
    assert!(st.success());
    let agents = query(&wh, "SELECT count(*) FROM agents");
    let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["collect", "--listen", "127.0.0.1:0", "-w"])
        .arg(&wh)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("openai_agents.jsonl"), "{stderr}");
    assert_eq!(query(&wh, "SELECT count(*) FROM agents"), agents);
}

/// Log records are received on /v1/logs (here as OTLP/JSON) and kept as events.
fn log_records_are_received() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let r = Receiver::start(&wh, &[]);
    let body = r#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"agents"}}]},"scopeLogs":[{"scope":{"name":"t"},"logRecords":[{"timeUnixNano":"1764950000000000000","eventName":"agent.note","severityNumber":9,"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","body":{"stringValue":"checked the forecast"}}]}]}]}"#;
    let (status, answer) = r.post("/v1/logs", &[JSON], body.as_bytes());
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    assert_eq!(answer, b"{}");
    let (ok, stderr) = r.stop();
    assert!(ok, "{stderr}");
    assert!(stderr.contains("1 log records"), "{stderr}");
    let rows = query(
        &wh,
        "SELECT type, data FROM events WHERE type = 'otlp:agent.note'",
    );
    assert!(rows.contains("checked the forecast"), "{rows}");
}

/// The traces of one conversation (one `gen_ai.conversation.id`, so one root), each sent in
/// a request of its own, give the tables and events of ingesting them as one file.
fn one_conversation_over_many_requests_is_one_file_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let mut by_trace: std::collections::BTreeMap<Vec<u8>, ExportTraceServiceRequest> =
        Default::default();
    for line in sample_lines() {
        let req = request_of(&line);
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                for mut span in ss.spans {
                    for kv in &mut span.attributes {
                        if kv.key == "gen_ai.conversation.id" {
                            kv.value = Some(opentelemetry_proto::tonic::common::v1::AnyValue {
                                value: Some(any_value::Value::StringValue("c1".into())),
                            });
                        }
                    }
                    let r = by_trace.entry(span.trace_id.clone()).or_default();
                    r.resource_spans
                        .push(opentelemetry_proto::tonic::trace::v1::ResourceSpans {
                            resource: rs.resource.clone(),
                            scope_spans: vec![opentelemetry_proto::tonic::trace::v1::ScopeSpans {
                                scope: ss.scope.clone(),
                                spans: vec![span],
                                schema_url: String::new(),
                            }],
                            schema_url: String::new(),
                        });
                }
            }
        }
    }
    assert!(by_trace.len() >= 5);
    let file = dir.path().join("one.jsonl");
    let text: String = by_trace
        .values()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&file, text).unwrap();
    let file_wh = dir.path().join("file-wh");
    let st = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["ingest", "-q", "-w"])
        .arg(&file_wh)
        .arg(&file)
        .status()
        .unwrap();
    assert!(st.success());
    let wh = dir.path().join("wh");
    let r = Receiver::start(&wh, &[]);
    for req in by_trace.values() {
        assert_eq!(
            r.post("/v1/traces", &[PROTOBUF], &req.encode_to_vec()).0,
            200
        );
    }
    assert!(r.stop().0);
    let events = "SELECT root, type, count(*) FROM events GROUP BY 1, 2 ORDER BY 1, 2";
    for q in TABLES_SQL.iter().chain([&events]) {
        assert_eq!(query(&wh, q), query(&file_wh, q), "{q}");
    }
    assert_eq!(
        query(&wh, "SELECT count(DISTINCT root) FROM agents"),
        "count(DISTINCT agents.root)\n1\n"
    );
}

/// Every table of a warehouse, each as an ordered dump (every column the sort key), so
/// that two warehouses compare row for row whatever their files.
fn table_dumps(warehouse: &Path) -> Vec<(String, String)> {
    [
        "events",
        "intervals",
        "turns",
        "errors",
        "tool_calls",
        "callbacks",
        "runs",
        "agents",
        "files",
        "rejects",
    ]
    .iter()
    .map(|t| {
        let head = query(warehouse, &format!("SELECT * FROM {t} LIMIT 0"));
        let n = head.lines().next().unwrap_or("").split(',').count();
        let order: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        let sql = format!("SELECT * FROM {t} ORDER BY {}", order.join(", "));
        (t.to_string(), query(warehouse, &sql))
    })
    .collect()
}

/// The sample's spans, one request each, children before their parents, over three
/// conversations (a trace sent before the span naming its conversation first makes an
/// agent of its own, which the conversation's then takes in), with a restart in the
/// middle: every commit maps again only the agents its request touches, and the warehouse
/// is, table for table and row for row, what a file ingest of the spool gives.
fn incremental_commits_equal_a_file_ingest_of_the_spool() {
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
    let mut spans = Vec::new();
    for line in sample_lines() {
        let req = request_of(&line);
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                for span in ss.spans {
                    spans.push((rs.resource.clone(), ss.scope.clone(), span));
                }
            }
        }
    }
    let mut traces: Vec<Vec<u8>> = spans.iter().map(|(_, _, s)| s.trace_id.clone()).collect();
    traces.sort();
    traces.dedup();
    assert!(traces.len() >= 5);
    for (_, _, span) in &mut spans {
        let t = traces.iter().position(|x| *x == span.trace_id).unwrap();
        for kv in &mut span.attributes {
            if kv.key == "gen_ai.conversation.id" {
                kv.value = Some(opentelemetry_proto::tonic::common::v1::AnyValue {
                    value: Some(any_value::Value::StringValue(format!("conv-{}", t % 3))),
                });
            }
        }
    }
    // Children first: the spans in reverse order of their start.
    spans.sort_by_key(|(_, _, s)| std::cmp::Reverse(s.start_time_unix_nano));
    let bodies: Vec<Vec<u8>> = spans
        .into_iter()
        .map(|(resource, scope, span)| {
            ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    resource,
                    scope_spans: vec![ScopeSpans {
                        scope,
                        spans: vec![span],
                        schema_url: String::new(),
                    }],
                    schema_url: String::new(),
                }],
            }
            .encode_to_vec()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let half = bodies.len() / 2;
    for (run, part) in [&bodies[..half], &bodies[half..]].into_iter().enumerate() {
        let r = Receiver::start(&wh, &[]);
        for b in part {
            assert_eq!(r.post("/v1/traces", &[PROTOBUF], b).0, 200);
        }
        let (ok, stderr) = r.stop();
        assert!(ok, "{stderr}");
        // Only the first commit into the new warehouse writes every bucket; the restart
        // learns what the warehouse holds.
        let whole = stderr.matches("every bucket").count();
        assert_eq!(whole, usize::from(run == 0), "{stderr}");
        assert!(stderr.contains("1 of "), "{stderr}");
    }
    let spool = wh.canonicalize().unwrap().join("_collect");
    let file_wh = dir.path().join("file-wh");
    let st = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args(["ingest", "-q", "-w"])
        .arg(&file_wh)
        .arg(&spool)
        .status()
        .unwrap();
    assert!(st.success());
    let (got, want) = (table_dumps(&wh), table_dumps(&file_wh));
    assert!(want[0].1.lines().count() > 50, "{}", want[0].1);
    assert_eq!(
        query(&wh, "SELECT count(DISTINCT root) FROM agents"),
        "count(DISTINCT agents.root)\n3\n"
    );
    for ((table, g), (_, w)) in got.iter().zip(&want) {
        assert_eq!(g, w, "{table}");
    }
}

trials! {
    incremental_commits_equal_a_file_ingest_of_the_spool,
    one_conversation_over_many_requests_is_one_file_ingest,
    log_records_are_received,
    a_warehouse_of_other_inputs_is_refused,
    requests_fill_the_tables_a_file_ingest_gives,
    malformed_bodies_are_400_and_write_nothing,
    oversized_bodies_are_413,
    a_token_is_required_when_set_and_beyond_loopback,
    rejected_spans_are_a_partial_success,
    kill_9_loses_no_acknowledged_span,
}
