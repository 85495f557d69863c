"""Runs OpenAI Agents SDK agents offline, traced by Pydantic Logfire, and writes OTLP JSON lines.

Logfire (`logfire.instrument_openai_agents()`) turns the SDK's traces into spans of its own
(`Agent run: 'name'`, `Responses API with 'model'`, `Function: name`, …), sent to no Logfire
project here (`send_to_logfire=False`) but to an in-memory exporter, written the way the
Collector's file exporter writes them (`otlp_json.py`). The agents use the SDK's Responses API
model with an OpenAI client whose HTTP transport answers in-process (httpx's MockTransport),
so nothing leaves the machine. The runs: a tool call, a tool that raises (the SDK hands the
error to the model), an answer cut at the output-token limit (the SDK raises), a 500 that
ends the run, a 429 retried by the runner's retry settings, a subagent run as a tool.

Usage: python logfire_agents.py OUT.jsonl EXPECTED.json
"""

import asyncio
import json
import sys

import httpx2 as httpx
import logfire
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otlp_json import write_otlp_json  # same folder

exporter = InMemorySpanExporter()
logfire.configure(
    send_to_logfire=False,
    console=False,
    service_name="logfire-agents",
    additional_span_processors=[SimpleSpanProcessor(exporter)],
)
logfire.instrument_openai_agents()

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool  # noqa: E402
from agents.exceptions import ModelBehaviorError  # noqa: E402
from agents.retry import ModelRetrySettings, retry_policies  # noqa: E402
from openai import APIStatusError, AsyncOpenAI  # noqa: E402

from expected import expect_error, expect_tool, expect_turn, expected  # noqa: E402  same folder
scripts = {}
counter = {"n": 0}


def response(output, tokens_in, tokens_out, status="completed", incomplete=None):
    counter["n"] += 1
    return {
        "id": f"resp_{counter['n']}", "object": "response", "created_at": 1796500000 + counter["n"],
        "model": "gpt-fake", "status": status,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "usage": {
            "input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def text(t, tokens_in, tokens_out, **kw):
    counter["n"] += 1
    item = {
        "type": "message", "id": f"msg_{counter['n']}", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": t, "annotations": []}],
    }
    return response([item], tokens_in, tokens_out, **kw)


def call(name, args, call_id, tokens_in, tokens_out):
    item = {
        "type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
        "arguments": json.dumps(args), "status": "completed",
    }
    return response([item], tokens_in, tokens_out)


def handler(request):
    body = json.loads(request.content)
    step = scripts[body.get("instructions")].pop(0)
    if isinstance(step, int):
        error = {"error": {"message": f"provider error {step}", "type": "error", "code": None}}
        return httpx.Response(step, json=error)
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


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


@function_tool
def lookup(key: str) -> str:
    """A lookup that fails."""
    raise RuntimeError(f"lookup of {key} failed")


async def run(a, prompt):
    try:
        await Runner.run(a, prompt)
    except (ModelBehaviorError, APIStatusError) as e:  # the run's failure is in its spans
        print(f"{a.name}: {type(e).__name__}: {e}", file=sys.stderr)


async def main():
    await run(agent("forecaster", [
        call("get_weather", {"city": "Oslo"}, "call_w1", 120, 20), text("It is sunny in Oslo.", 160, 12),
    ], tools=[get_weather]), "Weather in Oslo?")
    expect_turn("forecaster", "Completed", "completed", 2, 280, 32)
    expect_tool("get_weather", "call_w1", "ok")

    await run(agent("fumbler", [
        call("lookup", {"key": "k1"}, "call_f1", 90, 15), text("The lookup failed.", 130, 9),
    ], tools=[lookup]), "Look up k1")
    expect_turn("fumbler", "Completed", "completed", 2, 220, 24)
    expect_tool("lookup", "call_f1", "error")

    # The SDK raises on an incomplete response: the run fails.
    await run(agent("essayist", [
        text("Once upon a", 50, 64, status="incomplete", incomplete="max_output_tokens"),
    ], model_settings=ModelSettings(max_tokens=64)), "Write an essay")
    # Its model call span fails with the SDK's exception and no usage; the agent run span
    # stays OK, so the turn's failure is inferred from its last call.
    expect_turn("essayist", "Failed", "error", 1, 0, 0)
    behavior = "agents.exceptions.ModelBehaviorError"
    expect_error("essayist", "model", behavior, None, False, False)
    expect_error("essayist", "turn", behavior, None, None, None)

    await run(agent("doomed", [500]), "Anything")
    expect_turn("doomed", "Failed", "error", 1, 0, 0)
    expect_error("doomed", "model", "completion_unavailable", 500, False, False)
    expect_error("doomed", "turn", "completion_unavailable", 500, None, None)

    retry = ModelRetrySettings(
        max_retries=2, backoff={"initial_delay": 0.0, "max_delay": 0.0}, policy=retry_policies.http_status([429])
    )
    await run(agent("patient", [429, text("Done after a retry.", 40, 6)],
                    model_settings=ModelSettings(retry=retry)), "Try again")
    expect_turn("patient", "Completed", "completed", 2, 40, 6)
    expect_error("patient", "model", "completion_rate_limited", 429, True, True)

    researcher = agent("researcher", [text("Notes on otters", 30, 8)])
    await run(agent("lead", [
        call("research", {"input": "otters"}, "call_r1", 100, 18), text("Otters are playful.", 150, 10),
    ], tools=[researcher.as_tool(tool_name="research", tool_description="Research a topic")]), "Tell me about otters")
    expect_turn("lead", "Completed", "completed", 2, 250, 28)
    expect_turn("researcher", "Completed", "completed", 1, 30, 8, session="subagent")
    expect_tool("research", "call_r1", "ok")


asyncio.run(main())
write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(expected, f, indent=2)
    f.write("\n")
