//! The OTLP importer on real producer output under `tests/samples/otlp/`: Pydantic AI agents
//! (`scripts/otel/pydantic_ai_agents.py`) and OpenAI Agents SDK agents traced by OpenInference
//! (`scripts/otel/openai_agents.py`), run offline, their spans written as OTLP JSON lines the
//! way the Collector's file exporter writes them, ingested and reduced: the turns, finish
//! reasons, token totals, errors and tool calls must be what the agents were asked to do, as
//! each script recorded it beside its file (`<name>.expected.json`; `.ci/otel` runs the same
//! check on a fresh run of the scripts). The same check reads frameworks the CI does not run,
//! produced once by their scripts and committed (`tests/samples/SOURCES.md`): Strands Agents,
//! Google ADK (a 2.x and a 1.x release), the Vercel AI SDK, Semantic Kernel, AutoGen,
//! LlamaIndex, CrewAI and smolagents (all three traced by OpenInference), Haystack, the
//! OpenAI Agents SDK traced by Logfire and Mastra. A call id of `*` in an expected file is one the
//! producer does not record (the span id stands in).

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

/// agent, root or subagent session, state, finish reason, model calls, input, output tokens
type Turn = (String, String, String, String, i64, i64, i64);
/// agent, source, code, HTTP status, retried, recovered
type Error = (
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<bool>,
    Option<bool>,
);

#[test]
fn pydantic_ai_agents_give_what_they_were_asked_for() {
    check("pydantic_ai_agents");
}

#[test]
fn openai_agents_with_openinference_give_what_they_were_asked_for() {
    check("openai_agents");
}

#[test]
fn strands_agents_give_what_they_were_asked_for() {
    check("strands/strands_agents");
}

#[test]
fn google_adk_2_agents_give_what_they_were_asked_for() {
    check("google_adk/adk_2_agents");
}

#[test]
fn google_adk_1_agents_give_what_they_were_asked_for() {
    check("google_adk/adk_1_agents");
}

#[test]
fn vercel_ai_sdk_runs_give_what_they_were_asked_for() {
    check("vercel_ai/vercel_ai_agents");
}

#[test]
fn autogen_agents_give_what_they_were_asked_for() {
    check("autogen/autogen_agents");
}

#[test]
fn semantic_kernel_agents_give_what_they_were_asked_for() {
    check("semantic_kernel/semantic_kernel_agents");
}

#[test]
fn llama_index_agents_with_openinference_give_what_they_were_asked_for() {
    check("llama_index/llama_index_agents");
    // The subagent session is named by the agent its run states.
    assert_eq!(
        subagent_names("llama_index/llama_index_agents"),
        ["researcher"]
    );
}

#[test]
fn crewai_crews_with_openinference_give_what_they_were_asked_for() {
    check("crewai/crewai_agents");
    // CrewAI names its agent spans by the agent's role in `graph.node.id` only.
    assert_eq!(subagent_names("crewai/crewai_agents"), ["researcher"]);
}

#[test]
fn smolagents_agents_with_openinference_give_what_they_were_asked_for() {
    check("smolagents/smolagents_agents");
    // A managed agent's session is named by its span's name.
    assert_eq!(
        subagent_names("smolagents/smolagents_agents"),
        ["researcher"]
    );
}

#[test]
fn haystack_agents_give_what_they_were_asked_for() {
    check("haystack/haystack_agents");
}

#[test]
fn openai_agents_with_logfire_give_what_they_were_asked_for() {
    check("logfire/logfire_agents");
    // Logfire names the agent of an `Agent run` span in `name`.
    assert_eq!(subagent_names("logfire/logfire_agents"), ["researcher"]);
}

#[test]
fn mastra_agents_give_what_they_were_asked_for() {
    check("mastra/mastra_agents");
    assert_eq!(subagent_names("mastra/mastra_agents"), ["researcher"]);
}

/// The names of the subagent sessions `<name>.jsonl` opens.
fn subagent_names(name: &str) -> Vec<String> {
    let input = sample(&format!("{name}.jsonl"));
    let ing = ingest_paths(&[input], &IngestOptions::default()).unwrap();
    ing.agents
        .iter()
        .flat_map(|a| a.events.iter())
        .filter(|e| &*e.kind == "session/start")
        .map(|e| serde_json::from_str::<Value>(&e.data).unwrap())
        .filter(|d| !d["parent"].is_null())
        .map(|d| d["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Ingests `<name>.jsonl` and compares its tables with `<name>.expected.json`.
fn check(name: &str) {
    let expected = std::fs::read(sample(&format!("{name}.expected.json"))).unwrap();
    let expected: Value = serde_json::from_slice(&expected).unwrap();
    let input = sample(&format!("{name}.jsonl"));
    let ing = ingest_paths(&[input], &IngestOptions::default()).unwrap();
    assert!(ing.rejects.is_empty(), "{:?}", ing.rejects);
    let d = reduce_all(&ing);

    // Each turn's agent, from the attributes its turn/start carries.
    let mut agent_of: HashMap<(String, String), String> = HashMap::new();
    for a in &ing.agents {
        // LlamaIndex states its agent in its `init_run` step's output only.
        for e in a.events.iter().filter(|e| e.kind.ends_with(".init_run")) {
            let data: Value = serde_json::from_str(&e.data).unwrap();
            let output = data["attributes"]["output.value"].as_str().unwrap_or("");
            if let Some(at) = output.rfind("current_agent_name='") {
                let name = output[at + 20..].trim_end_matches("')");
                let turn = e.turn.as_deref().unwrap().to_string();
                agent_of.insert((a.root.clone(), turn), name.into());
            }
        }
        for e in a.events.iter().filter(|e| &*e.kind == "turn/start") {
            let data: Value = serde_json::from_str(&e.data).unwrap();
            let attrs = &data["attributes"];
            // Google ADK 1.x names its agent spans `agent_run [name]` only.
            let adk_name = data["name"]
                .as_str()
                .and_then(|n| n.strip_prefix("agent_run ["))
                .and_then(|n| n.strip_suffix(']'));
            // smolagents' agent spans are `name.run`.
            let smolagents_name = data["name"]
                .as_str()
                .filter(|_| data["scope"]["name"] == "openinference.instrumentation.smolagents")
                .and_then(|n| n.strip_suffix(".run"));
            // Logfire's `Agent run: {name!r}` spans.
            let logfire_name = attrs["name"]
                .as_str()
                .filter(|_| attrs["logfire.msg_template"] == "Agent run: {name!r}");
            let agent = attrs["gen_ai.agent.name"]
                .as_str()
                .or(attrs["agent.name"].as_str())
                .or(attrs["ai.telemetry.functionId"].as_str())
                .or(attrs["graph.node.id"].as_str())
                .or(adk_name)
                .or(smolagents_name)
                .or(logfire_name);
            let turn = e.turn.as_deref().unwrap().to_string();
            if let Some(agent) = agent {
                agent_of.insert((a.root.clone(), turn), agent.into());
            } else {
                agent_of.entry((a.root.clone(), turn)).or_insert("?".into());
            }
        }
    }
    let agent = |root: &str, turn: &str| agent_of[&(root.to_string(), turn.to_string())].clone();
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
            let state = t.state.unwrap_or("").to_string();
            let finish = if t.is_root {
                finish_of[&(t.root.to_string(), t.interval_open_seq.unwrap())].clone()
            } else if state == "Failed" {
                "error".into()
            } else {
                t.stop_reason.as_deref().unwrap_or("completed").to_string()
            };
            let session = if t.is_root { "root" } else { "subagent" };
            let (calls, input, output) = (t.model_calls, t.input_tokens, t.output_tokens);
            let agent = agent(&t.root, &t.turn);
            (agent, session.into(), state, finish, calls, input, output)
        })
        .collect();
    let want: Vec<Turn> = expected["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap().to_string();
            let n = |k: &str| x[k].as_i64().unwrap();
            let tokens = (n("model_calls"), n("input_tokens"), n("output_tokens"));
            let (agent, session) = (s("agent"), s("session"));
            let (state, finish) = (s("state"), s("finish_reason"));
            (agent, session, state, finish, tokens.0, tokens.1, tokens.2)
        })
        .collect();
    assert_eq!(sorted(got), sorted(want), "turns of {name}");

    let got: Vec<Error> = d
        .errors
        .iter()
        .map(|e| {
            let agent = agent(&e.root, e.turn.as_deref().unwrap());
            let source = e.source.to_string();
            (
                agent,
                source,
                e.code.clone(),
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
            let s = |k: &str| x[k].as_str().map(str::to_string);
            let (agent, source) = (s("agent").unwrap(), s("source").unwrap());
            let status = x["http_status"].as_i64();
            let (retried, recovered) = (x["retried"].as_bool(), x["recovered"].as_bool());
            (agent, source, s("code"), status, retried, recovered)
        })
        .collect();
    assert_eq!(sorted(got), sorted(want), "errors of {name}");

    let got: Vec<(String, String, String)> = d
        .tool_calls
        .iter()
        .map(|c| {
            let s = |v: &Option<_>| v.as_deref().map(str::to_string).unwrap_or_default();
            // A span id (16 hex digits) stands in for a call id the producer did not record.
            let id = s(&c.call_id);
            let span_id = id.len() == 16 && id.chars().all(|c| c.is_ascii_hexdigit());
            let call_id = if span_id { "*".to_string() } else { id };
            (s(&c.name), call_id, s(&c.status))
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
    assert_eq!(sorted(got), sorted(want), "tool calls of {name}");
}
