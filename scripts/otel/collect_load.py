"""Load for `runlog collect`: N exporter threads post pre-encoded OTLP/HTTP protobuf bodies
(ExportTraceServiceRequest) over keep-alive connections, each waiting for its answer before
the next (as an OpenTelemetry batch exporter does), and the acknowledged spans per second
are printed.

Every trace is one agent run shaped like the GenAI semantic conventions' spans: an
`invoke_agent` span, two `chat` inference spans (model, finish reason, token usage) and one
`execute_tool` span between them, with ids unique over the whole run. A request holds
--spans spans (whole traces); the bodies are all encoded before the clock starts.

Needs the `opentelemetry-proto` package (pip install opentelemetry-proto==1.45.2).

Usage: python collect_load.py URL [--threads N] [--requests R] [--spans S]
  (R requests per thread, S spans per request)
"""

import argparse
import http.client
import os
import threading
import time
import urllib.parse

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status


def kv(key, value):
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def trace_spans(start_ns):
    """One agent run: invoke_agent > chat, execute_tool, chat."""
    trace_id = os.urandom(16)
    agent_id = os.urandom(8)
    ms = 1_000_000

    def span(name, parent, t0, t1, attrs):
        return Span(
            trace_id=trace_id,
            span_id=agent_id if parent is None else os.urandom(8),
            parent_span_id=b"" if parent is None else parent,
            name=name,
            kind=Span.SPAN_KIND_INTERNAL if parent is None else Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=start_ns + t0 * ms,
            end_time_unix_nano=start_ns + t1 * ms,
            attributes=[kv(k, v) for k, v in attrs.items()],
            status=Status(code=Status.STATUS_CODE_UNSET),
        )

    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.provider.name": "openai",
    }
    return [
        span("chat gpt-4o-mini", agent_id, 1, 400, {
            **chat, "gen_ai.response.finish_reasons": '["tool_calls"]',
            "gen_ai.usage.input_tokens": 412, "gen_ai.usage.output_tokens": 31}),
        span("execute_tool get_weather", agent_id, 401, 420, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_" + os.urandom(6).hex(),
            "gen_ai.tool.call.arguments": '{"city": "Paris"}'}),
        span("chat gpt-4o-mini", agent_id, 421, 900, {
            **chat, "gen_ai.response.finish_reasons": '["stop"]',
            "gen_ai.usage.input_tokens": 480, "gen_ai.usage.output_tokens": 57}),
        span("invoke_agent weather", None, 0, 901, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
            "gen_ai.conversation.id": os.urandom(8).hex()}),
    ]


def body(spans_per_request, start_ns):
    spans = []
    while len(spans) < spans_per_request:
        spans.extend(trace_spans(start_ns))
        start_ns += 1_000_000_000
    req = ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource=Resource(attributes=[kv("service.name", "load")]),
        scope_spans=[ScopeSpans(scope=InstrumentationScope(name="load"), spans=spans)],
    )])
    return req.SerializeToString(), len(spans)


def exporter(url, bodies, out):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    acked = failed = 0
    for data, n in bodies:
        conn.request("POST", "/v1/traces", body=data,
                     headers={"Content-Type": "application/x-protobuf"})
        r = conn.getresponse()
        r.read()
        if r.status == 200:
            acked += n
        else:
            failed += n
    out.append((acked, failed))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--spans", type=int, default=200)
    a = ap.parse_args()
    t0 = time.time_ns()
    plans = [[body(a.spans, t0 + (i * a.requests + j) * 10**12) for j in range(a.requests)]
             for i in range(a.threads)]
    size = sum(len(d) for p in plans for d, _ in p)
    spans = sum(n for p in plans for _, n in p)
    print(f"{a.threads} exporters x {a.requests} requests of {a.spans} spans: {spans} spans, "
          f"{size / 1e6:.1f} MB of protobuf", flush=True)
    out = []
    threads = [threading.Thread(target=exporter, args=(a.url, p, out)) for p in plans]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - start
    acked = sum(x for x, _ in out)
    failed = sum(y for _, y in out)
    print(f"{acked} spans acknowledged, {failed} refused, in {secs:.2f} s: "
          f"{acked / secs:,.0f} spans/s", flush=True)


if __name__ == "__main__":
    main()
