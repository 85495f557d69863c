"""Runs CrewAI crews offline, traced by OpenInference, and writes OTLP JSON lines.

The agents use CrewAI's own OpenAI provider (`LLM(model="openai/…", base_url=…)`) against a
scripted Chat Completions server on loopback (`mock_openai.py`): CrewAI, the OpenAI client,
its errors and CrewAI's retries run as they do against the API, and nothing leaves the
machine. OpenInference's CrewAI instrumentation (`CrewAIInstrumentor`: crew, task and tool
spans) and its OpenAI instrumentation (`OpenAIInstrumentor`: the model calls) write
OpenTelemetry spans, written the way the Collector's file exporter writes them
(`otlp_json.py`). CrewAI's own anonymous telemetry is off. The runs, one crew of one task each:
a tool call, a tool that raises (CrewAI hands the error to the model), an answer cut at the
token limit, a 429 that CrewAI's rate-limit retry recovers, a 500 that ends the run (the
agent's task retries off), a subagent (`Agent.kickoff`) run inside a tool.

Usage: python crewai_agents.py OUT.jsonl EXPECTED.json
"""

import json
import os
import sys

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OPENAI_API_KEY"] = "offline"

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

import mock_openai  # noqa: E402  same folder
from mock_openai import call, text  # noqa: E402
from otlp_json import write_otlp_json  # noqa: E402  same folder

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from openinference.instrumentation.openai import OpenAIInstrumentor  # noqa: E402

CrewAIInstrumentor().instrument(tracer_provider=provider)
OpenAIInstrumentor().instrument(tracer_provider=provider)

from crewai import LLM, Agent, Crew, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402

base_url = mock_openai.serve()
from expected import expect_error, expect_tool, expect_turn, expected  # noqa: E402  same folder


def llm():
    return LLM(model="openai/gpt-4o-mini", base_url=base_url, api_key="offline", max_retries=0)


def agent(role, steps, tools=(), **kw):
    mock_openai.scripts[f"You are {role}."] = steps
    return Agent(role=role, goal=f"Do the {role}'s job.", backstory="Scripted.", llm=llm(), tools=list(tools), **kw)


@tool("get_weather")
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


@tool("lookup")
def lookup(key: str) -> str:
    """A lookup that fails."""
    raise RuntimeError(f"lookup of {key} failed")


@tool("research")
def research(topic: str) -> str:
    """Asks the researcher agent."""
    researcher = agent("researcher", [text(f"Notes on {topic}", 30, 8)])
    return str(researcher.kickoff(f"Research {topic}").raw)


def run(a, description):
    task = Task(description=description, expected_output="An answer.", agent=a)
    try:
        Crew(agents=[a], tasks=[task]).kickoff()
    except Exception as e:  # the run's failure is in its spans
        print(f"{a.role}: {type(e).__name__}: {e}", file=sys.stderr)


run(
    agent(
        "forecaster",
        [call("get_weather", {"city": "Oslo"}, "call_w1", 120, 20), text("It is sunny in Oslo.", 160, 12)],
        [get_weather],
    ),
    "Weather in Oslo?",
)
expect_turn("forecaster", "Completed", "completed", 2, 280, 32)
expect_tool("get_weather", "call_w1", "ok")

run(
    agent(
        "fumbler",
        [call("lookup", {"key": "k1"}, "call_f1", 90, 15), text("The lookup failed.", 130, 9)],
        [lookup],
    ),
    "Look up k1",
)
expect_turn("fumbler", "Completed", "completed", 2, 220, 24)
expect_tool("lookup", "call_f1", "error")

run(agent("essayist", [text("Once upon a", 50, 64, finish="length")]), "Write an essay")
expect_turn("essayist", "Completed", "max_tokens", 1, 50, 64)

run(agent("patient", [429, text("Done after a retry.", 40, 6)]), "Try again")
expect_turn("patient", "Completed", "completed", 2, 40, 6)
expect_error("patient", "model", "completion_rate_limited", 429, True, True)

run(agent("doomed", [500], max_retry_limit=0), "Anything")
expect_turn("doomed", "Failed", "error", 1, 0, 0)
expect_error("doomed", "model", "completion_unavailable", 500, False, False)
expect_error("doomed", "turn", "completion_unavailable", 500, None, None)

run(
    agent(
        "lead",
        [call("research", {"topic": "otters"}, "call_r1", 100, 18), text("Otters are playful.", 150, 10)],
        [research],
    ),
    "Tell me about otters",
)
expect_turn("lead", "Completed", "completed", 2, 250, 28)
expect_turn("researcher", "Completed", "completed", 1, 30, 8, session="subagent")
expect_tool("research", "call_r1", "ok")

write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(expected, f, indent=2)
    f.write("\n")
