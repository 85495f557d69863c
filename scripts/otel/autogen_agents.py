"""Runs AutoGen AgentChat agents offline and writes their OpenTelemetry traces as OTLP JSON lines.

The agents use AutoGen's `ReplayChatCompletionClient` (it answers with the given results in
order), so nothing leaves the machine. AutoGen traces agents and tools with the GenAI
conventions (`create_agent`, `invoke_agent`, `execute_tool` spans; model calls are left to a
model client's own instrumentation); the spans are written the way the Collector's file
exporter writes them (`otlp_json.py`). The runs: an agent with a tool call, an agent whose
tool raises, and a round-robin team of two agents.

Usage: python autogen_agents.py OUT.jsonl
"""

import asyncio
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otlp_json import write_otlp_json  # same folder

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import CreateResult, RequestUsage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402


def text(t, tokens_in, tokens_out):
    usage = RequestUsage(prompt_tokens=tokens_in, completion_tokens=tokens_out)
    return CreateResult(finish_reason="stop", content=t, usage=usage, cached=False)


def call(name, args, call_id, tokens_in, tokens_out):
    usage = RequestUsage(prompt_tokens=tokens_in, completion_tokens=tokens_out)
    fc = FunctionCall(id=call_id, arguments=args, name=name)
    return CreateResult(finish_reason="function_calls", content=[fc], usage=usage, cached=False)


async def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


async def flaky_lookup(key: str) -> str:
    """A lookup that fails."""
    raise RuntimeError(f"lookup of {key} failed")


def client(steps):
    return ReplayChatCompletionClient(steps, model_info={
        "vision": False, "function_calling": True, "json_output": False,
        "family": "unknown", "structured_output": False,
    })


async def main():
    forecaster = AssistantAgent(
        "forecaster",
        model_client=client([call("get_weather", '{"city": "Oslo"}', "call_w1", 120, 20), text("It is sunny in Oslo.", 160, 12)]),
        tools=[get_weather],
        reflect_on_tool_use=True,
    )
    await forecaster.run(task="Weather in Oslo?")
    fumbler = AssistantAgent(
        "fumbler",
        model_client=client([call("flaky_lookup", '{"key": "k1"}', "call_f1", 90, 15), text("The lookup failed.", 130, 9)]),
        tools=[flaky_lookup],
        reflect_on_tool_use=True,
    )
    await fumbler.run(task="Look up k1")
    writer = AssistantAgent("writer", model_client=client([text("A draft.", 40, 5)]))
    critic = AssistantAgent("critic", model_client=client([text("Looks good.", 50, 4)]))
    team = RoundRobinGroupChat([writer, critic], termination_condition=MaxMessageTermination(3))
    await team.run(task="Write a line")


asyncio.run(main())
write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
