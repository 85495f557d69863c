"""Runs Haystack agents offline, traced by Haystack's OpenTelemetry tracer, and writes OTLP
JSON lines.

The agents (`haystack.components.agents.Agent`) use `OpenAIChatGenerator` against a scripted
Chat Completions server on loopback (`mock_openai.py`): Haystack, the OpenAI client and its
errors run as they do against the API, and nothing leaves the machine. Haystack's tracer
(`OpenTelemetryTracer` of the `opentelemetry-haystack` integration, content tracing on:
`HAYSTACK_CONTENT_TRACING_ENABLED`) writes
`haystack.agent.run` / `haystack.agent.step` / `haystack.agent.step.llm` /
`haystack.agent.step.tool` spans, written the way the Collector's file exporter writes them
(`otlp_json.py`). The runs: a tool call, a tool that raises (the agent hands the error to the
model), an answer cut at the token limit, a 429 that the OpenAI client's retry recovers, a
500 that ends the run, a subagent run inside a tool.

Usage: python haystack_agents.py OUT.jsonl EXPECTED.json
"""

import json
import os
import sys

os.environ["HAYSTACK_CONTENT_TRACING_ENABLED"] = "true"
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"

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

from haystack import tracing  # noqa: E402
from haystack.components.agents import Agent  # noqa: E402
from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: E402
from haystack.dataclasses import ChatMessage  # noqa: E402
from haystack.tools import tool  # noqa: E402
from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer  # noqa: E402
from haystack.utils import Secret  # noqa: E402

tracing.enable_tracing(OpenTelemetryTracer(provider.get_tracer("haystack")))
base_url = mock_openai.serve()
expected = {"turns": [], "model_calls": [], "errors": [], "tool_calls": []}


def agent(name, steps, tools=(), max_retries=0):
    prompt = f"You are {name}."
    mock_openai.scripts[prompt] = steps
    generator = OpenAIChatGenerator(
        model="gpt-4o-mini",
        api_key=Secret.from_token("offline"),
        api_base_url=base_url,
        max_retries=max_retries,
    )
    a = Agent(chat_generator=generator, tools=list(tools), system_prompt=prompt)
    a.warm_up()
    return a


def expect_turn(name, state, finish, calls, tokens_in, tokens_out, session="root"):
    # Haystack's agents have no name, and its spans name none: every agent is "?".
    expected["turns"].append({
        "agent": "?", "session": session, "state": state, "finish_reason": finish,
        "model_calls": calls, "input_tokens": tokens_in, "output_tokens": tokens_out,
    })


def expect_error(name, source, code, status, retried, recovered):
    expected["errors"].append({
        "agent": "?", "source": source, "code": code, "http_status": status,
        "retried": retried, "recovered": recovered,
    })


def expect_tool(name, call_id, status):
    expected["tool_calls"].append({"name": name, "call_id": call_id, "status": status})


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


@tool
def lookup(key: str) -> str:
    """A lookup that fails."""
    raise RuntimeError(f"lookup of {key} failed")


@tool
def research(topic: str) -> str:
    """Asks the researcher agent."""
    researcher = agent("researcher", [text(f"Notes on {topic}", 30, 8)])
    return researcher.run(messages=[ChatMessage.from_user(f"Research {topic}")])["last_message"].text


def run(name, a, prompt):
    try:
        a.run(messages=[ChatMessage.from_user(prompt)])
    except Exception as e:  # the run's failure is in its spans
        print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)


run(
    "forecaster",
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
    "fumbler",
    agent(
        "fumbler",
        [call("lookup", {"key": "k1"}, "call_f1", 90, 15), text("The lookup failed.", 130, 9)],
        [lookup],
    ),
    "Look up k1",
)
expect_turn("fumbler", "Completed", "completed", 2, 220, 24)
expect_tool("lookup", "call_f1", "error")

run("essayist", agent("essayist", [text("Once upon a", 50, 64, finish="length")]), "Write an essay")
expect_turn("essayist", "Completed", "max_tokens", 1, 50, 64)

run("patient", agent("patient", [429, text("Done after a retry.", 40, 6)], max_retries=1), "Try again")
expect_turn("patient", "Completed", "completed", 1, 40, 6)

run("doomed", agent("doomed", [500]), "Anything")
expect_turn("doomed", "Failed", "error", 1, 0, 0)
expect_error("doomed", "model", "completion_unavailable", 500, False, False)
expect_error("doomed", "turn", "completion_unavailable", 500, None, None)

run(
    "lead",
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
