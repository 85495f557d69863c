//! The OTLP importer on real producer output: `tests/samples/otlp/pydantic_ai_agents.jsonl`,
//! written by `scripts/otel/pydantic_ai_agents.py` (Pydantic AI agents run offline, their
//! spans in OTLP JSON lines as the Collector's file exporter writes them), ingested and
//! reduced; the turns, finish reasons, token totals, errors and tool calls must be what the
//! agents were asked to do, as the script recorded it beside the file
//! (`pydantic_ai_agents.expected.json`, the same check `.ci/otel` runs on a fresh run).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use runlog_core::ingest::ingest_paths;
use runlog_core::{reduce_all, IngestOptions};
use serde_json::Value;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/samples/otlp")
        .join(name)
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

type Turn = (String, String, String, String, i64, i64, i64);
type Error = (
    String,
    String,
    String,
    Option<i64>,
    Option<bool>,
    Option<bool>,
);

#[test]
fn pydantic_ai_agents_give_what_they_were_asked_for() {
    let expected: Value =
        serde_json::from_slice(&std::fs::read(sample("pydantic_ai_agents.expected.json")).unwrap())
            .unwrap();
    let ing = ingest_paths(
        &[sample("pydantic_ai_agents.jsonl")],
        &IngestOptions::default(),
    )
    .unwrap();
    assert!(ing.rejects.is_empty(), "{:?}", ing.rejects);
    let d = reduce_all(&ing);

    // Each turn's agent, from the attributes its turn/start carries.
    let mut agent_of: HashMap<(String, String), String> = HashMap::new();
    for a in &ing.agents {
        for e in a.events.iter().filter(|e| &*e.kind == "turn/start") {
            let data: Value = serde_json::from_str(&e.data).unwrap();
            let name = data["attributes"]["gen_ai.agent.name"]
                .as_str()
                .unwrap_or("?");
            agent_of.insert(
                (a.root.clone(), e.turn.as_deref().unwrap().to_string()),
                name.into(),
            );
        }
    }
    let finish_of: HashMap<(String, i64), String> = d
        .intervals
        .iter()
        .map(|i| {
            let f = i.finish_reason.as_deref().unwrap_or("").to_string();
            ((i.root.to_string(), i.open_seq), f)
        })
        .collect();
    let got: Vec<Turn> = d
        .turns
        .iter()
        .map(|t| {
            let agent = agent_of[&(t.root.to_string(), t.turn.to_string())].clone();
            let state = t.state.unwrap_or("").to_string();
            let finish = if t.is_root {
                finish_of[&(t.root.to_string(), t.interval_open_seq.unwrap())].clone()
            } else if state == "Failed" {
                "error".into()
            } else {
                t.stop_reason.as_deref().unwrap_or("completed").to_string()
            };
            let session = if t.is_root { "root" } else { "subagent" };
            (
                agent,
                session.into(),
                state,
                finish,
                t.model_calls,
                t.input_tokens,
                t.output_tokens,
            )
        })
        .collect();
    let want: Vec<Turn> = expected["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap().to_string();
            let n = |k: &str| x[k].as_i64().unwrap();
            (
                s("agent"),
                s("session"),
                s("state"),
                s("finish_reason"),
                n("model_calls"),
                n("input_tokens"),
                n("output_tokens"),
            )
        })
        .collect();
    assert_eq!(sorted(got), sorted(want));

    let got: Vec<Error> = d
        .errors
        .iter()
        .map(|e| {
            let agent =
                agent_of[&(e.root.to_string(), e.turn.as_deref().unwrap().to_string())].clone();
            (
                agent,
                e.source.to_string(),
                e.code.clone().unwrap_or_default(),
                e.http_status,
                e.retried,
                e.recovered,
            )
        })
        .collect();
    let want: Vec<Error> = expected["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap().to_string();
            (
                s("agent"),
                s("source"),
                s("code"),
                x["http_status"].as_i64(),
                x["retried"].as_bool(),
                x["recovered"].as_bool(),
            )
        })
        .collect();
    assert_eq!(sorted(got), sorted(want));

    let got: Vec<(String, String, String)> = d
        .tool_calls
        .iter()
        .map(|c| {
            let s = |v: &Option<_>| v.as_deref().map(str::to_string).unwrap_or_default();
            (s(&c.name), s(&c.call_id), s(&c.status))
        })
        .collect();
    let want: Vec<(String, String, String)> = expected["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap().to_string();
            (s("name"), s("call_id"), s("status"))
        })
        .collect();
    assert_eq!(sorted(got), sorted(want));
}
