"""Runs smolagents agents offline, traced by OpenInference, and writes OTLP JSON lines.

The agents (`ToolCallingAgent`) use smolagents' `OpenAIModel` against a scripted Chat
Completions server on loopback (`mock_openai.py`): smolagents, the OpenAI client, its errors
and smolagents' rate-limit retry (its wait set to 0 s here) run as they do against the API,
and nothing leaves the machine. OpenInference's instrumentation (`SmolagentsInstrumentor`)
writes OpenTelemetry spans, written the way the Collector's file exporter writes them
(`otlp_json.py`). The runs: a tool call, a tool that raises (smolagents hands the error to the
model), an answer cut at the token limit, a 429 that smolagents' retry recovers, a 500 that
ends the run, a managed agent (a subagent) called as a tool. Each run ends with the
`final_answer` tool, as smolagents' agents do.

Usage: python smolagents_agents.py OUT.jsonl EXPECTED.json
"""

import json
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mock_openai  # same folder
from mock_openai import call, text
from otlp_json import write_otlp_json  # same folder

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402

SmolagentsInstrumentor().instrument(tracer_provider=provider)

import smolagents.models  # noqa: E402
from smolagents import OpenAIModel, ToolCallingAgent, tool  # noqa: E402

smolagents.models.RETRY_WAIT = 0  # the retry's first wait (60 s by default)
base_url = mock_openai.serve()
from expected import expect_error, expect_tool, expect_turn, expected  # noqa: E402  same folder


def agent(name, steps, tools=(), **kw):
    mock_openai.scripts[f"[agent:{name}]"] = steps
    model = OpenAIModel(
        model_id="gpt-4o-mini", api_base=base_url, api_key="offline", client_kwargs={"max_retries": 0}
    )
    return ToolCallingAgent(
        tools=list(tools),
        model=model,
        name=name,
        description=f"The {name} agent.",
        instructions=f"[agent:{name}]",
        max_steps=3,
        verbosity_level=0,
        **kw,
    )


def final(answer, call_id, tokens_in, tokens_out, finish="tool_calls"):
    step = call("final_answer", {"answer": answer}, call_id, tokens_in, tokens_out)
    step["choices"][0]["finish_reason"] = finish
    return step


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city
    """
    return f"Sunny in {city}"


@tool
def lookup(key: str) -> str:
    """A lookup that fails.

    Args:
        key: the key
    """
    raise RuntimeError(f"lookup of {key} failed")


def run(a, prompt):
    try:
        a.run(prompt)
    except Exception as e:  # the run's failure is in its spans
        print(f"{a.name}: {type(e).__name__}: {e}", file=sys.stderr)


run(
    agent(
        "forecaster",
        [call("get_weather", {"city": "Oslo"}, "call_w1", 120, 20), final("It is sunny in Oslo.", "call_w2", 160, 12)],
        [get_weather],
    ),
    "Weather in Oslo?",
)
expect_turn("forecaster", "Completed", "completed", 2, 280, 32)
expect_tool("get_weather", "call_w1", "ok")
expect_tool("final_answer", "call_w2", "ok")

run(
    agent(
        "fumbler",
        [call("lookup", {"key": "k1"}, "call_f1", 90, 15), final("The lookup failed.", "call_f2", 130, 9)],
        [lookup],
    ),
    "Look up k1",
)
expect_turn("fumbler", "Completed", "completed", 2, 220, 24)
expect_tool("lookup", "call_f1", "error")
expect_tool("final_answer", "call_f2", "ok")

run(agent("essayist", [final("Once upon a", "call_e1", 50, 64, finish="length")]), "Write an essay")
expect_turn("essayist", "Completed", "max_tokens", 1, 50, 64)
expect_tool("final_answer", "call_e1", "ok")

run(agent("patient", [429, final("Done after a retry.", "call_p1", 40, 6)]), "Try again")
expect_turn("patient", "Completed", "completed", 1, 40, 6)
expect_tool("final_answer", "call_p1", "ok")

researcher = agent("researcher", [final("Notes on otters", "call_n1", 30, 8)])
run(
    agent(
        "lead",
        [call("researcher", {"task": "Research otters"}, "call_r1", 100, 18), final("Otters are playful.", "call_r2", 150, 10)],
        managed_agents=[researcher],
    ),
    "Tell me about otters",
)
expect_turn("lead", "Completed", "completed", 2, 250, 28)
expect_turn("researcher", "Completed", "completed", 1, 30, 8, session="subagent")
# smolagents runs a managed agent without a tool span: the call is the subagent session.
expect_tool("final_answer", "call_r2", "ok")
expect_tool("final_answer", "call_n1", "ok")

# Last: OpenInference's smolagents instrumentation (0.1.43) never ends the span of a run that
# raises (nor detaches its context, so later runs would be inside it). The run's spans are
# there without their agent span, as in a trace cut before the run ended: runlog opens an
# inferred turn that stays Running, named by no span ("?").
run(agent("doomed", [500]), "Anything")
expect_turn("?", "Running", "", 1, 0, 0)
expect_error("?", "model", "completion_unavailable", 500, False, False)

write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(expected, f, indent=2)
    f.write("\n")
