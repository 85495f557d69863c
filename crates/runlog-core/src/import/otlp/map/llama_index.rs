//! LlamaIndex's agents as OpenInference traces them (`openinference-instrumentation-llama-index`,
//! tracer `openinference.instrumentation.llama_index`). It names each span after the class and
//! method it wraps and gives a workflow's run the kind `CHAIN`, so the run of a workflow agent
//! (`FunctionAgent.run`, `ReActAgent.run`, `CodeActAgent.run`, `AgentWorkflow.run`) is no
//! `AGENT` span; and every method of an LLM is an `LLM` span, the helpers that only build a
//! request (`OpenAI._prepare_chat_with_tools`) included. Here the span whose child is an agent
//! step (`BaseWorkflowAgent.run_agent_step`) is an agent invocation, named by the
//! `current_agent_name` its `init_run` step's output states, and an `LLM` span of a private
//! method (`_…`) is no model call.

use std::collections::HashMap;

use super::attrs::scope_name;
use super::Op;
use crate::import::otlp::Span;

const SCOPE: &str = "openinference.instrumentation.llama_index";

/// Marks LlamaIndex's workflow agent runs as agent invocations and its LLM helper spans as
/// other spans; returns the agent names its runs state, by span.
pub(super) fn workflow_agents(
    spans: &[Span],
    ops: &mut [Op],
    by_id: &HashMap<(&str, &str), usize>,
) -> HashMap<usize, String> {
    let mut names = HashMap::new();
    let parent = |s: &Span| by_id.get(&(s.trace.as_str(), s.parent.as_str())).copied();
    for (i, s) in spans.iter().enumerate() {
        let method = s.name.rsplit_once('.').map(|(_, m)| m);
        match method {
            Some("run_agent_step") if is_llama_index(s) => {
                if let Some(p) = parent(s).filter(|&p| ops[p] == Op::Other) {
                    ops[p] = Op::Agent;
                }
            }
            Some(m) if m.starts_with('_') && ops[i] == Op::Inference && is_llama_index(s) => {
                ops[i] = Op::Other;
            }
            _ => {}
        }
    }
    for s in spans {
        if !s.name.ends_with(".init_run") || !is_llama_index(s) {
            continue;
        }
        let Some(p) = parent(s).filter(|&p| ops[p] == Op::Agent) else {
            continue;
        };
        if let Some(name) = s.attrs.str("output.value").and_then(|o| current_agent(&o)) {
            names.insert(p, name);
        }
    }
    names
}

fn is_llama_index(s: &Span) -> bool {
    scope_name(s).as_deref() == Some(SCOPE)
}

/// The agent an `AgentInput(…, current_agent_name='forecaster')` (Python's text of the
/// step's output) names: its last member.
fn current_agent(output: &str) -> Option<String> {
    const MEMBER: &str = "current_agent_name='";
    let rest = &output[output.rfind(MEMBER)? + MEMBER.len()..];
    let name = rest.strip_suffix("')")?;
    (!name.is_empty() && !name.contains('\'')).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::current_agent;

    #[test]
    fn the_agent_is_the_last_member_of_the_input() {
        let out = "AgentInput(input=[ChatMessage(text='current_agent_name=\\'x\\'')], \
                   current_agent_name='forecaster')";
        assert_eq!(current_agent(out).as_deref(), Some("forecaster"));
        assert_eq!(current_agent("AgentInput(input=[])"), None);
        assert_eq!(current_agent("AgentInput(current_agent_name='')"), None);
    }
}
