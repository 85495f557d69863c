"""Runs Semantic Kernel agents offline and writes their OpenTelemetry traces as OTLP JSON lines.

The agents (`ChatCompletionAgent`) use a scripted chat completion service (a
`ChatCompletionClientBase` whose answers are given here, traced with Semantic Kernel's own
`trace_chat_completion` decorator as its connectors are), so nothing leaves the machine.
Semantic Kernel's model diagnostics are on
(`SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS`): `invoke_agent`,
`chat.completions` and `execute_tool` spans, written the way the Collector's file exporter
writes them (`otlp_json.py`). The runs: a tool call, a tool that raises, an answer cut at the
token limit, a 429 that ends the run (raised as the OpenAI connector raises it).

Usage: python semantic_kernel_agents.py OUT.jsonl
"""

import asyncio
import os
import sys
from typing import Annotated, Any, ClassVar

os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from otlp_json import write_otlp_json  # noqa: E402  same folder

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

import httpx  # noqa: E402
import openai  # noqa: E402
from semantic_kernel.agents import ChatCompletionAgent  # noqa: E402
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase  # noqa: E402
from semantic_kernel.connectors.ai.completion_usage import CompletionUsage  # noqa: E402
from semantic_kernel.contents import ChatMessageContent, FunctionCallContent  # noqa: E402
from semantic_kernel.contents.utils.author_role import AuthorRole  # noqa: E402
from semantic_kernel.contents.utils.finish_reason import FinishReason  # noqa: E402
from semantic_kernel.exceptions.service_exceptions import ServiceResponseException  # noqa: E402
from semantic_kernel.functions import kernel_function  # noqa: E402
from semantic_kernel.utils.telemetry.model_diagnostics.decorators import trace_chat_completion  # noqa: E402


def reply(items, finish, tokens_in, tokens_out):
    usage = CompletionUsage(prompt_tokens=tokens_in, completion_tokens=tokens_out)
    return ChatMessageContent(
        role=AuthorRole.ASSISTANT, items=items, finish_reason=finish, metadata={"usage": usage}
    )


def text(t, tokens_in, tokens_out, finish=FinishReason.STOP):
    return reply([], finish, tokens_in, tokens_out).model_copy(update={"content": t})


def call(plugin, function, args, call_id, tokens_in, tokens_out):
    fc = FunctionCallContent(id=call_id, plugin_name=plugin, function_name=function, arguments=args)
    return reply([fc], FinishReason.TOOL_CALLS, tokens_in, tokens_out)


class ScriptedChat(ChatCompletionClientBase):
    """Answers with its steps in order; an exception is raised."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True
    steps: list[Any] = []

    @trace_chat_completion("scripted")
    async def _inner_get_chat_message_contents(self, chat_history, settings):
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return [step]

    def _update_function_choice_settings_callback(self):
        return lambda *args, **kwargs: None

    def _reset_function_choice_settings(self, settings):
        pass


class Weather:
    @kernel_function(description="The weather in a city.")
    def get_weather(self, city: Annotated[str, "the city"]) -> str:
        return f"Sunny in {city}"


class Lookup:
    @kernel_function(description="A lookup that fails.")
    def lookup(self, key: Annotated[str, "the key"]) -> str:
        raise RuntimeError(f"lookup of {key} failed")


def rate_limited():
    """What the OpenAI connector raises on HTTP 429."""
    response = httpx.Response(429, request=httpx.Request("POST", "https://api.openai.com/v1/chat/completions"))
    cause = openai.RateLimitError("Error code: 429 - Rate limit reached", response=response, body=None)
    return ServiceResponseException("ScriptedChat service failed to complete the prompt", cause)


async def run(name, steps, prompt, plugins=()):
    service = ScriptedChat(ai_model_id="scripted-large", steps=steps)
    agent = ChatCompletionAgent(service=service, name=name, plugins=list(plugins))
    try:
        await agent.get_response(messages=prompt)
    except Exception as e:  # the run's failure is in its spans
        print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)


async def main():
    await run(
        "forecaster",
        [
            call("Weather", "get_weather", {"city": "Oslo"}, "call_w1", 120, 20),
            text("It is sunny in Oslo.", 160, 12),
        ],
        "Weather in Oslo?",
        [Weather()],
    )
    await run(
        "fumbler",
        [
            call("Lookup", "lookup", {"key": "k1"}, "call_f1", 90, 15),
            text("The lookup failed.", 130, 9),
        ],
        "Look up k1",
        [Lookup()],
    )
    await run("essayist", [text("Once upon a", 50, 64, FinishReason.LENGTH)], "Write an essay")
    await run("limited", [rate_limited()], "Hi")


asyncio.run(main())
write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
