"""Runs Google ADK agents offline and writes their OpenTelemetry traces as OTLP JSON lines.

The agents use a scripted model (a `google.adk.models.BaseLlm` whose answers are given here
as `LlmResponse`s), so nothing leaves the machine. ADK traces every run with the
OpenTelemetry SDK (`invocation`, `invoke_agent`, `call_llm`, `execute_tool` spans); the
spans are written the way the Collector's file exporter writes them (`otlp_json.py`). The
runs: two turns of one session with a tool call, an answer cut at the token limit, a
provider error 429 that ends the run, a tool that raises, and a subagent run as a tool
(`AgentTool`).

Usage: python adk_agents.py OUT.jsonl
"""

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

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.genai import errors, types  # noqa: E402

STEPS = {}


def usage(tokens_in, tokens_out):
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=tokens_in,
        candidates_token_count=tokens_out,
        total_token_count=tokens_in + tokens_out,
    )


def response(content, finish, tokens_in, tokens_out):
    # ADK releases before 1.12 have no `finish_reason` on LlmResponse.
    extra = {"finish_reason": finish} if "finish_reason" in LlmResponse.model_fields else {}
    return LlmResponse(content=content, usage_metadata=usage(tokens_in, tokens_out), **extra)


def text(t, tokens_in, tokens_out, finish=types.FinishReason.STOP):
    return response(types.Content(role="model", parts=[types.Part(text=t)]), finish, tokens_in, tokens_out)


def call(name, args, call_id, tokens_in, tokens_out):
    part = types.Part(function_call=types.FunctionCall(name=name, args=args, id=call_id))
    return response(types.Content(role="model", parts=[part]), types.FinishReason.STOP, tokens_in, tokens_out)


class ScriptedLlm(BaseLlm):
    """Answers with the steps given for its model name, in order; an exception is raised."""

    async def generate_content_async(self, llm_request, stream=False):
        step = STEPS[self.model].pop(0)
        if isinstance(step, Exception):
            raise step
        yield step


def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"status": "success", "report": f"Sunny in {city}"}


def flaky_lookup(key: str) -> dict:
    """A lookup that fails."""
    raise ValueError(f"lookup of {key} failed")


def run(agent, session_id, prompts):
    runner = InMemoryRunner(agent=agent, app_name="heldout")
    runner.session_service.create_session_sync(
        app_name="heldout", user_id="u1", session_id=session_id
    )
    for prompt in prompts:
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        try:
            for _ in runner.run(user_id="u1", session_id=session_id, new_message=message):
                pass
        except Exception as e:  # the run's failure is in its spans
            print(f"{agent.name}: {type(e).__name__}: {e}", file=sys.stderr)


STEPS["m-forecaster"] = [
    call("get_weather", {"city": "Oslo"}, "adk-call-1", 120, 20),
    text("It is sunny in Oslo.", 160, 12),
    text("Still sunny.", 180, 5),
]
run(
    LlmAgent(name="forecaster", model=ScriptedLlm(model="m-forecaster"), tools=[get_weather]),
    "session-forecast",
    ["Weather in Oslo?", "And now?"],
)
STEPS["m-essayist"] = [text("Once upon a", 50, 64, types.FinishReason.MAX_TOKENS)]
run(LlmAgent(name="essayist", model=ScriptedLlm(model="m-essayist")), "session-essay", ["Essay"])
STEPS["m-limited"] = [
    errors.ClientError(429, {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}})
]
run(LlmAgent(name="limited", model=ScriptedLlm(model="m-limited")), "session-limited", ["Hi"])
STEPS["m-fumbler"] = [call("flaky_lookup", {"key": "k1"}, "adk-call-2", 90, 15)]
run(
    LlmAgent(name="fumbler", model=ScriptedLlm(model="m-fumbler"), tools=[flaky_lookup]),
    "session-fumbler",
    ["Look up k1"],
)
STEPS["m-researcher"] = [text("Notes on otters.", 30, 8)]
STEPS["m-lead"] = [
    call("researcher", {"request": "otters"}, "adk-call-3", 100, 18),
    text("Otters are playful.", 150, 10),
]
researcher = LlmAgent(
    name="researcher", description="Researches a topic.", model=ScriptedLlm(model="m-researcher")
)
run(
    LlmAgent(name="lead", model=ScriptedLlm(model="m-lead"), tools=[AgentTool(agent=researcher)]),
    "session-lead",
    ["Tell me about otters"],
)

write_otlp_json(exporter.get_finished_spans(), sys.argv[1])
