"""Runs OpenAI Agents SDK agents offline, traced by OpenInference, and writes OTLP JSON lines.

The agents use the SDK's own Responses API model (`OpenAIResponsesModel`) with an OpenAI client
whose HTTP transport answers in-process (httpx's MockTransport): the SDK, the OpenAI client and
its errors run as they do against the API, and nothing leaves the machine. OpenInference's
instrumentation (`OpenAIAgentsInstrumentor`) turns the SDK's traces into OpenTelemetry spans;
this script writes them the way the OpenTelemetry Collector's file exporter does (one
`TracesData` JSON object per line, hex ids, int64 as strings, enums as integers), a few spans
per line in the order they ended.

Besides the trace file it writes what the agents were asked to do, for `check_tables.py`.

Usage: python openai_agents.py OUT.jsonl EXPECTED.json [OTLP_HTTP_URL]

With OTLP_HTTP_URL (a `runlog collect` receiver, http://HOST:PORT) the spans are also
exported over OTLP/HTTP as they end (scripts/otel/otlp_http.py).
"""

import asyncio
import json
import sys

import httpx2 as httpx
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otlp_http  # same folder
from otlp_json import write_otlp_json  # same folder

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
otlp_http.add(provider, sys.argv[3] if len(sys.argv) > 3 else None, gzip=True)
trace.set_tracer_provider(provider)

from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402

OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool  # noqa: E402
from agents.exceptions import ModelBehaviorError  # noqa: E402
from agents.retry import ModelRetrySettings, retry_policies  # noqa: E402
from openai import AsyncOpenAI, APIStatusError  # noqa: E402

expected = {"turns": [], "model_calls": [], "errors": [], "tool_calls": []}

# What the fake API answers next, per agent (by its instructions): a list of steps, each a
# response (dict) or an HTTP error status (int).
scripts = {}
counter = {"n": 0}


def response(output, input_tokens, output_tokens, status="completed", incomplete=None):
    counter["n"] += 1
    return {
        "id": f"resp_{counter['n']}",
        "object": "response",
        "created_at": 1796500000 + counter["n"],
        "model": "gpt-fake",
        "status": status,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def text(t, input_tokens, output_tokens, **kw):
    counter["n"] += 1
    item = {
        "type": "message", "id": f"msg_{counter['n']}", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": t, "annotations": []}],
    }
    return response([item], input_tokens, output_tokens, **kw)


def call(name, args, call_id, input_tokens, output_tokens):
    item = {
        "type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
        "arguments": json.dumps(args), "status": "completed",
    }
    return response([item], input_tokens, output_tokens)


def handler(request):
    body = json.loads(request.content)
    step = scripts[body.get("instructions")].pop(0)
    if isinstance(step, int):
        return httpx.Response(step, json={"error": {"message": f"provider error {step}", "type": "error", "code": None}})
    return httpx.Response(200, json=step)


client = AsyncOpenAI(
    api_key="offline", base_url="http://api.invalid/v1", max_retries=0,
    http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
)
model = OpenAIResponsesModel(model="gpt-fake", openai_client=client)


def agent(name, steps, **kw):
    instructions = f"You are {name}."
    scripts[instructions] = steps
    return Agent(name=name, instructions=instructions, model=model, **kw)


def expect_turn(name, state, finish, calls, input_tokens, output_tokens, session="root"):
    expected["turns"].append({
        "agent": name, "session": session, "state": state, "finish_reason": finish,
        "model_calls": calls, "input_tokens": input_tokens, "output_tokens": output_tokens,
    })


@function_tool
def get_weather(city: str) -> str:
    return f"sunny in {city}"


async def main():
    # 1. Two tool calls, then an answer.
    weather = agent("weather", [
        call("get_weather", {"city": "Paris"}, "call_w1", 120, 14),
        call("get_weather", {"city": "Rome"}, "call_w2", 180, 12),
        text("Sunny in both.", 240, 9),
    ], tools=[get_weather])
    await Runner.run(weather, "Weather in Paris and Rome?")
    expect_turn("weather", "Completed", "completed", 3, 540, 35)
    expected["tool_calls"] += [
        {"name": "get_weather", "call_id": "call_w1", "status": "ok"},
        {"name": "get_weather", "call_id": "call_w2", "status": "ok"},
    ]

    # 2. An answer cut at the output-token limit.
    historian = agent("historian", [
        text("The history of Rome begins", 50, 64, status="incomplete", incomplete="max_output_tokens"),
    ], model_settings=ModelSettings(max_tokens=64))
    # The SDK raises on an incomplete response: the run fails, the call's finish reason stays.
    try:
        await Runner.run(historian, "Tell me the history of Rome")
        raise SystemExit("the historian agent did not fail")
    except ModelBehaviorError:
        pass
    # Its span records the error but no usage; the agent span stays OK, so the turn's failure
    # is inferred from its last call.
    expect_turn("historian", "Failed", "error", 1, 0, 0)
    expected["errors"].append({"agent": "historian", "source": "model", "code": None, "http_status": None, "retried": False, "recovered": False})
    expected["errors"].append({"agent": "historian", "source": "turn", "code": None, "http_status": None, "retried": None, "recovered": None})

    # 3. Provider errors that end the run.
    for status, code in [(429, "completion_rate_limited"), (500, "completion_unavailable")]:
        failing = agent(f"failing{status}", [status])
        try:
            await Runner.run(failing, "Hi")
            raise SystemExit(f"the {status} agent did not fail")
        except APIStatusError:
            pass
        expect_turn(f"failing{status}", "Failed", "error", 1, 0, 0)
        expected["errors"].append({"agent": f"failing{status}", "source": "model", "code": code, "http_status": status, "retried": False, "recovered": False})
        expected["errors"].append({"agent": f"failing{status}", "source": "turn", "code": code, "http_status": status, "retried": None, "recovered": None})

    # 4. A 429 retried by the runner, then an answer.
    resilient = agent("resilient", [429, text("Recovered answer.", 40, 5)], model_settings=ModelSettings(
        retry=ModelRetrySettings(max_retries=2, backoff={"initial_delay": 0.0, "max_delay": 0.0}, policy=retry_policies.http_status([429])),
    ))
    await Runner.run(resilient, "Hi")
    expect_turn("resilient", "Completed", "completed", 2, 40, 5)
    expected["errors"].append({"agent": "resilient", "source": "model", "code": "completion_rate_limited", "http_status": 429, "retried": True, "recovered": True})

    # 5. A subagent run as a tool.
    researcher = agent("researcher", [text("Otters hold hands while sleeping.", 90, 10)])
    lead = agent("lead", [
        call("research", {"input": "otters"}, "call_l1", 100, 11),
        text("Here is what the researcher found.", 150, 12),
    ], tools=[researcher.as_tool(tool_name="research", tool_description="Research a topic")])
    await Runner.run(lead, "Research otters")
    expect_turn("lead", "Completed", "completed", 2, 250, 23)
    expect_turn("researcher", "Completed", "completed", 1, 90, 10, session="subagent")
    expected["tool_calls"].append({"name": "research", "call_id": "call_l1", "status": "ok"})


asyncio.run(main())
otlp_http.finish()
spans = exporter.get_finished_spans()
write_otlp_json(spans, sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(expected, f, indent=1)
print(f"{len(spans)} spans, {len(expected['turns'])} turns", file=sys.stderr)
