"""Runs Pydantic AI agents offline and writes their OpenTelemetry traces as OTLP JSON lines.

The agents use Pydantic AI's FunctionModel (a model whose answers are Python functions), so
nothing leaves the machine. Every agent run is instrumented (`Agent.instrument_all()`); the
OpenTelemetry Python SDK collects the spans and this script writes them the way the
OpenTelemetry Collector's file exporter does: one `TracesData` JSON object per line, trace and
span ids in hex, 64-bit integers as strings, enums as integers. Spans go out in batches of a
few, in the order they ended (children before their parents), as a batching exporter sends
them.

Besides the trace file it writes what the agents were asked to do (the expected turns, finish
reasons, token totals, error codes and tool calls), for `check_tables.py`.

Usage: python pydantic_ai_agents.py OUT.jsonl EXPECTED.json [OTLP_HTTP_URL]

With OTLP_HTTP_URL (a `runlog collect` receiver, http://HOST:PORT) the spans are also
exported over OTLP/HTTP as they end (scripts/otel/otlp_http.py).
"""

import json
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otlp_http  # same folder
from otlp_json import write_otlp_json  # same folder

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
otlp_http.add(provider, sys.argv[3] if len(sys.argv) > 3 else None, gzip=False)
trace.set_tracer_provider(provider)

from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.exceptions import ModelHTTPError  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.fallback import FallbackModel  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

Agent.instrument_all()

# What each agent run should give; filled as the runs are made.
expected = {"turns": [], "model_calls": [], "errors": [], "tool_calls": []}


def answered_tools(messages):
    """The tool calls already answered in this run's messages."""
    return sum(
        1 for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    )


def reply(text, input_tokens, output_tokens, finish="stop"):
    return ModelResponse(
        parts=[TextPart(text)],
        usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        finish_reason=finish,
    )


def call(tool, args, call_id, input_tokens, output_tokens):
    return ModelResponse(
        parts=[ToolCallPart(tool, args, tool_call_id=call_id)],
        usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        finish_reason="tool_call",
    )


def expect_turn(agent, state, finish, calls, input_tokens, output_tokens, session="root"):
    expected["turns"].append(
        {
            "agent": agent,
            "session": session,
            "state": state,
            "finish_reason": finish,
            "model_calls": calls,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        }
    )


# 1. An agent that calls two tools, then answers.
def weather_model(messages, info):
    done = answered_tools(messages)
    if done == 0:
        return call("get_weather", {"city": "Paris"}, "w1", 120, 14)
    if done == 1:
        return call("get_time", {"zone": "Europe/Paris"}, "w2", 180, 12)
    return reply("Sunny in Paris, it is noon.", 240, 9)


weather = Agent(FunctionModel(weather_model, model_name="fn-weather"), name="weather")


@weather.tool_plain
def get_weather(city: str) -> str:
    return f"sunny in {city}"


@weather.tool_plain
def get_time(zone: str) -> str:
    return f"12:00 in {zone}"


weather.run_sync("What is the weather in Paris, and the time?")
expect_turn("weather", "Completed", "completed", 3, 540, 35)
expected["tool_calls"] += [
    {"name": "get_weather", "call_id": "w1", "status": "ok"},
    {"name": "get_time", "call_id": "w2", "status": "ok"},
]


# 2. An agent that answers at once.
def hello_model(messages, info):
    return reply("Hello!", 30, 3)


Agent(FunctionModel(hello_model, model_name="fn-hello"), name="greeter").run_sync("Hi")
expect_turn("greeter", "Completed", "completed", 1, 30, 3)


# 3. An answer cut off at the output-token limit.
def long_model(messages, info):
    return reply("The history of Rome begins", 50, 64, finish="length")


Agent(
    FunctionModel(long_model, model_name="fn-long"),
    name="historian",
    model_settings=ModelSettings(max_tokens=64),
).run_sync("Tell me the history of Rome")
expect_turn("historian", "Completed", "max_tokens", 1, 50, 64)


# 4. Provider errors that end the run: 429 and 500.
for status, code in [(429, "completion_rate_limited"), (500, "completion_unavailable")]:

    def failing_model(messages, info, status=status):
        raise ModelHTTPError(status, f"fn-{status}", body={"error": {"message": "provider error"}})

    try:
        Agent(FunctionModel(failing_model, model_name=f"fn-{status}"), name=f"failing{status}").run_sync("Hi")
        raise SystemExit(f"the {status} agent did not fail")
    except ModelHTTPError:
        pass
    expect_turn(f"failing{status}", "Failed", "error", 1, 0, 0)
    # One error from the model call, one from the turn it ended.
    expected["errors"].append({"agent": f"failing{status}", "source": "model", "code": code, "http_status": status, "retried": False, "recovered": False})
    expected["errors"].append({"agent": f"failing{status}", "source": "turn", "code": code, "http_status": status, "retried": None, "recovered": None})


# 5. A rate-limited call retried on a fallback model, which answers.
def limited_model(messages, info):
    raise ModelHTTPError(429, "fn-limited", body={"error": {"message": "slow down"}})


def backup_model(messages, info):
    return reply("Recovered answer.", 40, 5)


Agent(
    FallbackModel(FunctionModel(limited_model, model_name="fn-limited"), FunctionModel(backup_model, model_name="fn-backup")),
    name="resilient",
).run_sync("Hi")
expect_turn("resilient", "Completed", "completed", 2, 40, 5)
expected["errors"].append({"agent": "resilient", "source": "model", "code": "completion_rate_limited", "http_status": 429, "retried": True, "recovered": True})


# 6. A subagent run as a tool.
def researcher_model(messages, info):
    if answered_tools(messages) == 0:
        return call("lookup", {"topic": "otters"}, "r1", 60, 8)
    return reply("Otters hold hands while sleeping.", 90, 10)


researcher = Agent(FunctionModel(researcher_model, model_name="fn-researcher"), name="researcher")


@researcher.tool_plain
def lookup(topic: str) -> str:
    return f"facts about {topic}"


def lead_model(messages, info):
    if answered_tools(messages) == 0:
        return call("research", {"question": "otters"}, "l1", 100, 11)
    return reply("Here is what the researcher found.", 150, 12)


lead = Agent(FunctionModel(lead_model, model_name="fn-lead"), name="lead")


@lead.tool
async def research(ctx: RunContext, question: str) -> str:
    result = await researcher.run(question)
    return result.output


lead.run_sync("Research otters")
expect_turn("lead", "Completed", "completed", 2, 250, 23)
expect_turn("researcher", "Completed", "completed", 2, 150, 18, session="subagent")
expected["tool_calls"] += [
    {"name": "research", "call_id": "l1", "status": "ok"},
    {"name": "lookup", "call_id": "r1", "status": "ok"},
]


# A failing tool: the model asks for it, it raises a retry, the model answers.
def tool_error_model(messages, info):
    if answered_tools(messages) == 0 and not any(
        getattr(p, "part_kind", "") == "retry-prompt" for m in messages for p in getattr(m, "parts", [])
    ):
        return call("flaky", {}, "f1", 20, 4)
    return reply("Done without the tool.", 30, 4)


flaky_agent = Agent(FunctionModel(tool_error_model, model_name="fn-flaky"), name="flaky")


@flaky_agent.tool_plain
def flaky() -> str:
    raise RuntimeError("tool failed")


try:
    flaky_agent.run_sync("Use the flaky tool")
    flaky_ok = True
except RuntimeError:
    flaky_ok = False
expect_turn("flaky", "Completed" if flaky_ok else "Failed", "completed" if flaky_ok else "error", 2 if flaky_ok else 1, 50 if flaky_ok else 20, 8 if flaky_ok else 4)
expected["tool_calls"].append({"name": "flaky", "call_id": "f1", "status": "error"})
if not flaky_ok:
    expected["errors"].append({"agent": "flaky", "source": "turn", "code": "RuntimeError", "http_status": None, "retried": None, "recovered": None})


otlp_http.finish()
spans = exporter.get_finished_spans()
write_otlp_json(spans, sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(expected, f, indent=1)
print(f"{len(spans)} spans, {len(expected['turns'])} turns", file=sys.stderr)
