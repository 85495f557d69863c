//! The OTLP importer on lines shaped as the Collector's file exporter writes them (the
//! attributes as Pydantic AI's instrumentation sets them, trimmed).

use serde_json::{json, Value};

use super::*;
use crate::import::testing::{context, feed};
use crate::import::{detect_record, Format};

const TRACE: &str = "462de2a30090e23740c3e38694bc55b7";

fn kv(key: &str, v: Value) -> Value {
    let value = match v {
        Value::String(s) => json!({ "stringValue": s }),
        Value::Number(n) => json!({ "intValue": n.to_string() }),
        Value::Array(a) => {
            json!({ "arrayValue": { "values": a.into_iter().map(|s| json!({"stringValue": s})).collect::<Vec<_>>() } })
        }
        other => other,
    };
    json!({ "key": key, "value": value })
}

fn span(
    id: &str,
    parent: &str,
    name: &str,
    start_ms: u64,
    end_ms: u64,
    attrs: Vec<Value>,
) -> Value {
    json!({
        "traceId": TRACE, "spanId": id, "parentSpanId": parent, "name": name, "kind": 1,
        "startTimeUnixNano": (1_796_499_117_000u64 + start_ms) * 1_000_000,
        "endTimeUnixNano": ((1_796_499_117_000u64 + end_ms) * 1_000_000).to_string(),
        "attributes": attrs, "status": {}
    })
}

fn line(spans: Vec<Value>) -> String {
    json!({"resourceSpans": [{"resource": {"attributes": [kv("service.name", json!("svc"))]},
        "scopeSpans": [{"scope": {"name": "pydantic-ai"}, "spans": spans}]}]})
    .to_string()
}

fn agent(id: &str, parent: &str, start: u64, end: u64, conv: &str) -> Value {
    span(
        id,
        parent,
        "invoke_agent a",
        start,
        end,
        vec![
            kv("gen_ai.operation.name", json!("invoke_agent")),
            kv("gen_ai.agent.name", json!("a")),
            kv("gen_ai.conversation.id", json!(conv)),
            kv("final_result", json!("done")),
        ],
    )
}

fn chat(id: &str, parent: &str, start: u64, end: u64, finish: &str) -> Value {
    span(
        id,
        parent,
        "chat m",
        start,
        end,
        vec![
            kv("gen_ai.operation.name", json!("chat")),
            kv("gen_ai.system", json!("openai")),
            kv("gen_ai.request.model", json!("m")),
            kv("gen_ai.usage.prompt_tokens", json!(100)),
            kv("gen_ai.usage.output_tokens", json!(7)),
            kv("gen_ai.usage.cache_read.input_tokens", json!(40)),
            kv("gen_ai.response.finish_reasons", json!([finish])),
        ],
    )
}

fn kinds(evs: &[crate::event::Event]) -> Vec<String> {
    evs.iter().map(|e| e.kind.to_string()).collect()
}

fn data(e: &crate::event::Event) -> Value {
    serde_json::from_str(&e.data).unwrap()
}

#[test]
fn detects_otlp_lines_and_documents() {
    assert_eq!(detect_record(line(vec![]).as_bytes()), Some(Format::Otlp));
    assert_eq!(detect_record(br#"{"resourceLogs":[]}"#), Some(Format::Otlp));
    assert_eq!(
        detect_record(br#"  "resourceSpans": ["#),
        Some(Format::Otlp)
    );
    assert_eq!(detect_record(br#"{"resourceSpans": ["#), Some(Format::Otlp));
    assert_eq!(detect_record(b"{"), None);
    // A cut line of the file exporter is not a document's start.
    assert_eq!(detect_record(br#"{"resourceSpans":[{"resource":{"#), None);
}

#[test]
fn unordered_batches_give_events_in_time_order() {
    // Children end first and are exported first; the agent span comes in a later batch.
    let lines = [
        line(vec![chat(
            "0000000000000002",
            "0000000000000001",
            10,
            20,
            "tool_call",
        )]),
        line(vec![span(
            "0000000000000003",
            "0000000000000001",
            "execute_tool get",
            21,
            25,
            vec![
                kv("gen_ai.operation.name", json!("execute_tool")),
                kv("gen_ai.tool.name", json!("get")),
                kv("gen_ai.tool.call.id", json!("c1")),
                kv("gen_ai.tool.call.arguments", json!("{\"city\":\"Paris\"}")),
            ],
        )]),
        line(vec![
            chat("0000000000000004", "0000000000000001", 26, 30, "stop"),
            agent("0000000000000001", "", 0, 31, "conv"),
        ]),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (evs, rejected) = feed(&mut OtlpImporter::new(&context("t.jsonl")), &lines);
    assert!(rejected.is_empty());
    assert_eq!(
        kinds(&evs),
        [
            "session/start",
            "inbox/receipt",
            "turn/start",
            "model/end",
            "tool/call",
            "tool/result",
            "model/end",
            "turn/end",
            "agent/idle"
        ]
    );
    assert!(evs
        .windows(2)
        .all(|w| w[0].ts <= w[1].ts && w[0].seq < w[1].seq));
    assert!(evs.iter().all(|e| &*e.root == "conv"));
    assert_eq!(evs[2].turn.as_deref(), Some("0000000000000001"));
    assert_eq!(evs[3].line, 1);
    let m = data(&evs[3]);
    assert_eq!(m["usage"]["input_tokens"], 100);
    assert_eq!(m["usage"]["cached_input_tokens"], 40);
    assert_eq!(m["usage"]["total_tokens"], 107);
    assert_eq!(m["finish_reason"], "tool_call");
    assert_eq!(m["provider"], "openai");
    assert_eq!(data(&evs[4])["arguments"]["city"], "Paris");
    assert_eq!(data(&evs[7])["reason"]["kind"], "completed");
    assert_eq!(data(&evs[7])["text"], "done");
}

#[test]
fn a_nested_agent_is_a_subagent_and_length_is_max_tokens() {
    let lines = [line(vec![
        agent("00000000000000a2", "00000000000000a1", 5, 9, "child-conv"),
        chat("00000000000000a3", "00000000000000a2", 6, 8, "stop"),
        chat("00000000000000a4", "00000000000000a1", 10, 12, "length"),
        agent("00000000000000a1", "", 0, 13, "parent-conv"),
    ])];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (evs, _) = feed(&mut OtlpImporter::new(&context("t.jsonl")), &lines);
    let start = evs
        .iter()
        .find(|e| &*e.kind == "session/start" && &*e.session == "child-conv")
        .unwrap();
    assert_eq!(&*start.root, "parent-conv");
    assert_eq!(data(start)["parent"], "parent-conv");
    assert_eq!(data(start)["parent_turn"], "00000000000000a1");
    let ends: Vec<Value> = evs
        .iter()
        .filter(|e| &*e.kind == "turn/end")
        .map(data)
        .collect();
    assert_eq!(ends[0]["reason"]["kind"], "completed");
    assert_eq!(ends[1]["reason"]["kind"], "max_tokens");
    assert_eq!(ends[1]["reason"]["cause"], "length");
    assert_eq!(kinds(&evs).last().map(String::as_str), Some("agent/idle"));
}

#[test]
fn a_failed_call_is_a_model_error_with_its_http_status() {
    let mut failed = chat("00000000000000b2", "00000000000000b1", 1, 2, "stop");
    failed["status"] =
        json!({"code": 2, "message": "ModelHTTPError: status_code: 429, model_name: m"});
    failed["events"] = json!([{"timeUnixNano": "1796499117002000000", "name": "exception", "attributes": [
        kv("exception.type", json!("pydantic_ai.exceptions.ModelHTTPError")),
        kv("exception.message", json!("status_code: 429, model_name: m, body: {}")),
    ]}]);
    let mut typed = chat("00000000000000b3", "00000000000000b1", 3, 4, "stop");
    typed["attributes"]
        .as_array_mut()
        .unwrap()
        .push(kv("error.type", json!("401")));
    let lines = [line(vec![
        failed,
        typed,
        agent("00000000000000b1", "", 0, 5, "c"),
    ])];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (evs, _) = feed(&mut OtlpImporter::new(&context("t.jsonl")), &lines);
    let errors: Vec<Value> = evs
        .iter()
        .filter(|e| &*e.kind == "model/end")
        .map(|e| data(e)["error"].clone())
        .collect();
    assert_eq!(errors[0]["code"], "completion_rate_limited");
    assert_eq!(errors[0]["details"]["http_status"], 429);
    assert_eq!(
        errors[0]["details"]["raw_code"],
        "pydantic_ai.exceptions.ModelHTTPError"
    );
    assert_eq!(errors[1]["code"], "completion_unauthorized");
    assert_eq!(errors[1]["details"]["raw_code"], "401");
    assert!(kinds(&evs).contains(&"otlp:exception".to_string()));
}

#[test]
fn calls_without_their_agent_span_leave_the_turn_running() {
    let lines = [line(vec![chat(
        "00000000000000c2",
        "00000000000000c1",
        1,
        2,
        "tool_call",
    )])];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (evs, _) = feed(&mut OtlpImporter::new(&context("t.jsonl")), &lines);
    assert_eq!(
        kinds(&evs),
        ["session/start", "inbox/receipt", "turn/start", "model/end"]
    );
    assert_eq!(&*evs[0].root, TRACE);
    assert_eq!(evs[3].turn.as_deref(), Some("00000000000000c1"));
    assert_eq!(data(&evs[2])["inferred"], true);
}

#[test]
fn other_spans_logs_and_a_pretty_printed_document_are_kept() {
    let doc = serde_json::to_string_pretty(&json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        span("00000000000000d1", "", "GET /", 0, 1, vec![kv("http.method", json!("GET"))])
    ]}]}]}))
    .unwrap();
    let lines: Vec<&str> = doc.lines().collect();
    let (evs, rejected) = feed(&mut OtlpImporter::new(&context("t.json")), &lines);
    assert!(rejected.is_empty());
    assert_eq!(kinds(&evs), ["session/start", "otlp:GET /"]);
    assert_eq!(data(&evs[1])["attributes"]["http.method"], "GET");

    let logs = json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "timeUnixNano": "1796499117000000000", "severityNumber": 9, "body": {"stringValue": "hello"},
        "eventName": "gen_ai.client.inference.operation.details"
    }]}]}]}).to_string();
    let (evs, rejected) = feed(
        &mut OtlpImporter::new(&context("l.jsonl")),
        &[&logs, "not json", r#"{"resourceSpans":[{"resource":{"#],
    );
    assert_eq!(rejected, [2, 3]);
    assert_eq!(
        kinds(&evs),
        [
            "session/start",
            "otlp:gen_ai.client.inference.operation.details"
        ]
    );
    assert_eq!(data(&evs[1])["body"], "hello");
}

#[test]
fn bad_lines_are_rejected_without_panic() {
    let mut imp = OtlpImporter::new(&context("t.jsonl"));
    let (evs, mut rejected) = feed(
        &mut imp,
        &[
            "[1]",
            r#"{"resourceSpans": 3}"#,
            r#"{"other":1}"#,
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}"#,
        ],
    );
    // Whole-object lines are decoded together once held: rejected when the file ends.
    let late = imp.rejects();
    assert_eq!(late.iter().map(|r| r.0).collect::<Vec<_>>(), [2, 4]);
    for r in &late {
        assert!(r.1.contains("invalid OTLP TracesData"), "{}", r.1);
    }
    rejected.extend(late.iter().map(|r| r.0));
    rejected.sort_unstable();
    assert!(evs.is_empty());
    assert_eq!(rejected, [1, 2, 3, 4]);
}

fn oi(
    id: &str,
    parent: &str,
    name: &str,
    start: u64,
    end: u64,
    kind: &str,
    mut attrs: Vec<Value>,
) -> Value {
    attrs.push(kv("openinference.span.kind", json!(kind)));
    span(id, parent, name, start, end, attrs)
}

#[test]
fn an_openinference_workflow_is_the_interval_and_its_agents_are_turns() {
    // Agent workflow (AGENT) > Agent workflow (CHAIN) > weather (AGENT) > turn (CHAIN) > LLM, TOOL
    let mut failed = oi(
        "00000000000000e7",
        "00000000000000e4",
        "response",
        8,
        9,
        "LLM",
        vec![],
    );
    failed["status"] =
        json!({"code": 2, "message": "Error getting response: {'error': 'Error code: 500 - x'}"});
    let lines = [line(vec![
        oi(
            "00000000000000e5",
            "00000000000000e4",
            "response",
            2,
            3,
            "LLM",
            vec![
                kv("llm.token_count.prompt", json!(10)),
                kv(
                    "llm.output_messages.0.message.tool_calls.0.tool_call.id",
                    json!("call_9"),
                ),
                kv(
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                    json!("get"),
                ),
            ],
        ),
        oi(
            "00000000000000e6",
            "00000000000000e4",
            "get",
            4,
            5,
            "TOOL",
            vec![kv("tool.name", json!("get"))],
        ),
        failed,
        oi(
            "00000000000000e4",
            "00000000000000e3",
            "turn",
            1,
            10,
            "CHAIN",
            vec![],
        ),
        oi(
            "00000000000000e3",
            "00000000000000e2",
            "weather",
            1,
            10,
            "AGENT",
            vec![kv("agent.name", json!("weather"))],
        ),
        oi(
            "00000000000000e2",
            "00000000000000e1",
            "Agent workflow",
            0,
            11,
            "CHAIN",
            vec![],
        ),
        oi(
            "00000000000000e1",
            "",
            "Agent workflow",
            0,
            11,
            "AGENT",
            vec![],
        ),
    ])];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (evs, _) = feed(&mut OtlpImporter::new(&context("t.jsonl")), &lines);
    let lifecycle: Vec<(String, Option<String>)> = evs
        .iter()
        .filter(|e| !e.kind.starts_with("otlp:"))
        .map(|e| (e.kind.to_string(), e.turn.as_deref().map(str::to_string)))
        .collect();
    let turn = Some("00000000000000e3".to_string());
    assert_eq!(
        lifecycle,
        [
            ("session/start".to_string(), None),
            ("inbox/receipt".into(), None),
            ("turn/start".into(), turn.clone()),
            ("model/end".into(), turn.clone()),
            ("tool/call".into(), turn.clone()),
            ("tool/result".into(), turn.clone()),
            ("model/end".into(), turn.clone()),
            ("turn/end".into(), turn.clone()),
            ("agent/idle".into(), None),
        ]
    );
    let call = evs.iter().find(|e| &*e.kind == "tool/call").unwrap();
    assert_eq!(data(call)["call_id"], "call_9");
    assert_eq!(data(call)["call_id_inferred"], true);
    let end = data(evs.iter().find(|e| &*e.kind == "turn/end").unwrap());
    assert_eq!(end["reason"]["kind"], "error");
    assert_eq!(end["reason"]["error"]["code"], "completion_unavailable");
    assert_eq!(end["inferred"], true);
    assert!(evs
        .iter()
        .all(|e| &*e.root == TRACE && &*e.session == TRACE));
}

/// Protobuf `TracesData` of one agent span.
fn agent_traces() -> opentelemetry_proto::tonic::trace::v1::TracesData {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as PSpan};
    let kv = |k: &str, v: &str| KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        ..Default::default()
    };
    TracesData {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![PSpan {
                    trace_id: vec![0x46; 16],
                    span_id: vec![0xab; 8],
                    name: "invoke_agent a".into(),
                    start_time_unix_nano: 1_796_499_117_000_000_000,
                    end_time_unix_nano: 1_796_499_118_000_000_000,
                    attributes: vec![
                        kv("gen_ai.operation.name", "invoke_agent"),
                        kv("gen_ai.conversation.id", "conv-1"),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

const AGENT_KINDS: [&str; 5] = [
    "session/start",
    "inbox/receipt",
    "turn/start",
    "turn/end",
    "agent/idle",
];

/// A framed OTLP protobuf file of one agent span, then a message that does not decode and
/// one cut short: the span's events, two rejects, no panic.
#[test]
fn protobuf_messages_are_read_and_bad_ones_rejected() {
    use prost::Message;
    let data = agent_traces();
    let mut file = Vec::new();
    for msg in [data.encode_to_vec(), vec![0x0a, 0x05, 0x01]] {
        file.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        file.extend_from_slice(&msg);
    }
    file.extend_from_slice(&[0, 0, 0, 9, 0x0a]);
    assert!(is_proto_stream(&file));
    assert!(!is_proto_stream(b"{\"resourceSpans\":[]}\n"));
    let mut imp = OtlpImporter::new(&context("t.binpb"));
    assert_eq!(imp.read_proto(&file), 3);
    let mut evs = Vec::new();
    imp.finish(&mut evs);
    let rejected: Vec<u64> = imp.rejects().iter().map(|r| r.0).collect();
    assert_eq!(rejected, [2, 3]);
    assert_eq!(kinds(&evs), AGENT_KINDS);
    assert!(evs.iter().all(|e| &*e.root == "conv-1" && e.line == 1));
}

/// A file of one bare `TracesData` message (an OTLP/HTTP request body) is message 1; one
/// that does not decode whole is rejected; text that starts with newlines, a bare message
/// whose span ids are not of their sizes, and other bytes are not taken as protobuf.
#[test]
fn unframed_protobuf_file_is_one_message() {
    use opentelemetry_proto::tonic::logs::v1::{LogRecord as PRecord, ResourceLogs, ScopeLogs};
    use prost::Message;
    let bare = agent_traces().encode_to_vec();
    assert!(is_proto_stream(&bare));
    let mut imp = OtlpImporter::new(&context("t.binpb"));
    assert_eq!(imp.read_proto(&bare), 1);
    let mut evs = Vec::new();
    imp.finish(&mut evs);
    assert!(imp.rejects().is_empty());
    assert_eq!(kinds(&evs), AGENT_KINDS);
    assert!(evs.iter().all(|e| &*e.root == "conv-1" && e.line == 1));

    // The head of a file is enough when it holds the first span.
    let mut two = agent_traces();
    let extra = two.resource_spans[0].scope_spans[0].spans[0].clone();
    two.resource_spans[0].scope_spans[0].spans.push(extra);
    let two = two.encode_to_vec();
    assert!(is_proto_stream(&two[..two.len() - 20]));

    let mut broken = bare.clone();
    broken.extend_from_slice(&[0x0a, 0x40, 0x01]);
    assert!(is_proto_stream(&broken));
    let mut imp = OtlpImporter::new(&context("t.binpb"));
    assert_eq!(imp.read_proto(&broken), 1);
    let mut evs = Vec::new();
    imp.finish(&mut evs);
    assert!(evs.is_empty());
    let rejected: Vec<u64> = imp.rejects().iter().map(|r| r.0).collect();
    assert_eq!(rejected, [1]);

    let mut odd = agent_traces();
    odd.resource_spans[0].scope_spans[0].spans[0].trace_id = vec![1; 15];
    for not in [
        odd.encode_to_vec(),
        b"\n\n\n\n\n{\"resourceSpans\":[]}\n".to_vec(),
        b"\n{\"a\":1}\n".to_vec(),
        vec![0x0a, 0x02, 0x08, 0x01],
        vec![0x0a],
    ] {
        assert!(!is_proto_stream(&not), "{not:?}");
    }

    let logs = LogsData {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: vec![PRecord {
                    time_unix_nano: 1_796_499_117_000_000_000,
                    event_name: "gen_ai.client.inference.operation.details".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    assert!(is_proto_stream(&logs.encode_to_vec()));
}
