"""Runs Strands Agents offline and writes their OpenTelemetry traces as OTLP JSON lines.

The agents use a scripted model (a `strands.models.Model` whose answers are given here as
Strands stream events), so nothing leaves the machine. Strands traces every run with the
OpenTelemetry SDK (`invoke_agent`, `execute_event_loop_cycle`, `chat`, `execute_tool`
spans); the spans are written the way the Collector's file exporter writes them
(`otlp_json.py`). The runs: a tool call, a tool that fails, an answer cut at the token limit
(Strands raises `MaxTokensReachedException`), a throttled model call that the agent's retry
strategy retries, a provider error that ends the run, and a subagent run as a tool.

Usage: python strands_agents.py OUT.jsonl
"""

import json
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

from strands import Agent, tool  # noqa: E402
from strands.agent import ModelRetryStrategy  # noqa: E402
from strands.models import Model  # noqa: E402
from strands.types.exceptions import ModelThrottledException  # noqa: E402


class ScriptedModel(Model):
    """Answers with the given steps in order: a step is ("text", str, stop, in, out),
    ("tool", name, id, input, in, out) or ("raise", exception)."""

    def __init__(self, model_id, steps):
        self.config = {"model_id": model_id}
        self.steps = list(steps)

    def update_config(self, **config):
        self.config.update(config)

    def get_config(self):
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError
        yield  # pragma: no cover

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        step = self.steps.pop(0)
        if step[0] == "raise":
            raise step[1]
        yield {"messageStart": {"role": "assistant"}}
        if step[0] == "text":
            _, text, stop, tokens_in, tokens_out = step
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
        else:
            _, name, call_id, args, tokens_in, tokens_out = step
            stop = "tool_use"
            yield {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": call_id}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}
        yield {
            "metadata": {
                "usage": {
                    "inputTokens": tokens_in,
                    "outputTokens": tokens_out,
                    "totalTokens": tokens_in + tokens_out,
                },
                "metrics": {"latencyMs": 5},
            }
        }


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


@tool
def flaky_lookup(key: str) -> str:
    """A lookup that fails."""
    raise RuntimeError(f"lookup of {key} failed")


@tool
def research(topic: str) -> str:
    """Asks the researcher agent."""
    researcher = Agent(
        name="researcher",
        model=ScriptedModel("scripted-small", [("text", f"Notes on {topic}", "end_turn", 30, 8)]),
        callback_handler=None,
    )
    return str(researcher(f"Research {topic}"))


def run(name, steps, prompt, tools=(), **kwargs):
    agent = Agent(
        name=name,
        model=ScriptedModel("scripted-large", steps),
        tools=list(tools),
        callback_handler=None,
        **kwargs,
    )
    try:
        agent(prompt)
    except Exception as e:  # the run's failure is in its spans
        print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)


run(
    "forecaster",
    [
        ("tool", "get_weather", "tooluse_w1", {"city": "Oslo"}, 120, 20),
        ("text", "It is sunny in Oslo.", "end_turn", 160, 12),
    ],
    "Weather in Oslo?",
    tools=[get_weather],
)
run(
    "fumbler",
    [
        ("tool", "flaky_lookup", "tooluse_f1", {"key": "k1"}, 90, 15),
        ("text", "The lookup failed.", "end_turn", 130, 9),
    ],
    "Look up k1",
    tools=[flaky_lookup],
)
run("essayist", [("text", "Once upon a", "max_tokens", 50, 64)], "Write an essay")
run(
    "patient",
    [
        ("raise", ModelThrottledException("ThrottlingException: Rate exceeded")),
        ("text", "Done after a retry.", "end_turn", 40, 6),
    ],
    "Try again",
    retry_strategy=ModelRetryStrategy(max_attempts=3, initial_delay=0, max_delay=0),
)
run(
    "doomed",
    [("raise", RuntimeError("Error code: 500 - upstream failure"))],
    "Anything",
)
run(
    "lead",
    [
        ("tool", "research", "tooluse_r1", {"topic": "otters"}, 100, 18),
        ("text", "Otters are playful.", "end_turn", 150, 10),
    ],
    "Tell me about otters",
    tools=[research],
)

write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
