"""Runs LlamaIndex agents offline, traced by OpenInference, and writes OTLP JSON lines.

The agents (`FunctionAgent` workflows, not streaming) use LlamaIndex's OpenAI LLM with an
OpenAI client whose HTTP transport answers in-process (httpx's MockTransport): LlamaIndex, the
OpenAI client, its errors and LlamaIndex's retries run as they do against the API, and nothing
leaves the machine. OpenInference's instrumentation (`LlamaIndexInstrumentor`) turns
LlamaIndex's instrumentation events into OpenTelemetry spans, written the way the Collector's
file exporter writes them (`otlp_json.py`). The runs: a tool call, a tool that raises (the
agent hands the error to the model), an answer cut at the token limit, a 429 that LlamaIndex's
retry recovers, a 500 that ends the run, a streamed run with a tool call, a subagent run
inside a tool.

Usage: python llama_index_agents.py OUT.jsonl EXPECTED.json
"""

import asyncio
import json
import sys

import httpx
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mock_openai import call, chunks, text  # same folder
from otlp_json import write_otlp_json  # same folder

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

LlamaIndexInstrumentor().instrument(tracer_provider=provider)

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.llms.openai import OpenAI  # noqa: E402

from expected import expect_error, expect_tool, expect_turn, expected  # noqa: E402  same folder

# What the fake API answers next, per agent (by its system prompt): a list of steps, each a
# chat completion (dict) or an HTTP error status (int).
scripts = {}


def handler(request):
    body = json.loads(request.content)
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    step = scripts[system].pop(0)
    if isinstance(step, int):
        error = {"error": {"message": f"provider error {step}", "type": "error", "code": None}}
        return httpx.Response(step, json=error, headers={"retry-after": "0"})
    if body.get("stream"):
        usage = body.get("stream_options", {}).get("include_usage", False)
        sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks(step, usage)) + "data: [DONE]\n\n"
        return httpx.Response(200, text=sse, headers={"content-type": "text/event-stream"})
    return httpx.Response(200, json=step)


def llm(max_retries, **kw):
    transport = httpx.MockTransport(handler)
    return OpenAI(
        **kw,
        model="gpt-4o-mini",
        api_key="offline",
        api_base="http://api.invalid/v1",
        max_retries=max_retries,
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
    )


def agent(name, steps, tools=(), max_retries=0, streaming=False, **kw):
    prompt = f"You are {name}."
    scripts[prompt] = steps
    return FunctionAgent(
        name=name,
        description=f"The {name} agent.",
        system_prompt=prompt,
        tools=list(tools),
        llm=llm(max_retries, **kw),
        streaming=streaming,
    )


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def lookup(key: str) -> str:
    """A lookup that fails."""
    raise RuntimeError(f"lookup of {key} failed")


async def research(topic: str) -> str:
    """Asks the researcher agent."""
    researcher = agent("researcher", [text(f"Notes on {topic}", 30, 8)])
    return str(await researcher.run(user_msg=f"Research {topic}"))


async def run(a, prompt):
    try:
        await a.run(user_msg=prompt)
    except Exception as e:  # the run's failure is in its spans
        print(f"{a.name}: {type(e).__name__}: {e}", file=sys.stderr)


async def main():
    await run(
        agent(
            "forecaster",
            [call("get_weather", {"city": "Oslo"}, "call_w1", 120, 20), text("It is sunny in Oslo.", 160, 12)],
            [get_weather],
        ),
        "Weather in Oslo?",
    )
    expect_turn("forecaster", "Completed", "completed", 2, 280, 32)
    expect_tool("get_weather", "call_w1", "ok")

    await run(
        agent(
            "fumbler",
            [call("lookup", {"key": "k1"}, "call_f1", 90, 15), text("The lookup failed.", 130, 9)],
            [lookup],
        ),
        "Look up k1",
    )
    expect_turn("fumbler", "Completed", "completed", 2, 220, 24)
    expect_tool("lookup", "call_f1", "error")

    await run(agent("essayist", [text("Once upon a", 50, 64, finish="length")]), "Write an essay")
    expect_turn("essayist", "Completed", "max_tokens", 1, 50, 64)

    await run(agent("patient", [429, text("Done after a retry.", 40, 6)], max_retries=2), "Try again")
    expect_turn("patient", "Completed", "completed", 1, 40, 6)

    await run(agent("doomed", [500]), "Anything")
    expect_turn("doomed", "Failed", "error", 1, 0, 0)
    expect_error("doomed", "model", "completion_unavailable", 500, False, False)
    expect_error("doomed", "turn", "completion_unavailable", 500, None, None)

    # Streamed (the agents' default), usage asked for as the API needs it.
    await run(
        agent(
            "streamer",
            [call("get_weather", {"city": "Rome"}, "call_s1", 70, 14), text("Sunny in Rome.", 95, 7)],
            [get_weather],
            streaming=True,
            additional_kwargs={"stream_options": {"include_usage": True}},
        ),
        "Weather in Rome?",
    )
    expect_turn("streamer", "Completed", "completed", 2, 165, 21)
    expect_tool("get_weather", "call_s1", "ok")

    await run(
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


asyncio.run(main())
write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(expected, f, indent=2)
    f.write("\n")
