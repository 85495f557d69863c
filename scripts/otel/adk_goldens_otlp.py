"""Google ADK's telemetry goldens as OTLP JSON lines.

google/adk-python keeps the span trees its telemetry tests record
(`tests/unittests/telemetry/functional_goldens/agent/*.json`: each span's name, attributes,
status, children and the log records emitted in it, values that vary written `PRESENT`).
This writes each tree as the Collector's file exporter would: one `TracesData` line of its
spans, children before their parents as a batching exporter sends them, then one `LogsData`
line of its log records. What the goldens leave out is made up here, and only that: trace
and span ids (numbered), times (each span opens 1 ms after its parent or previous sibling
ends and lasts 10 ms per span under it, plus 10), and `PRESENT` values (`<attribute>-<n>`,
the conversation id `session-<n>` for the n-th golden).

Usage: python adk_goldens_otlp.py OUT.jsonl GOLDEN.json...
"""

import json
import sys

BASE_NS = 1_780_000_000_000_000_000
STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": attributes(v)}}
    return {"stringValue": str(v)}


def attributes(attrs):
    return [{"key": k, "value": value(v)} for k, v in attrs.items()]


def size(node):
    return 1 + sum(size(c) for c in node["children"])


def walk(node, n, trace_id, parent, start, spans, logs, counter):
    counter[0] += 1
    span_id = f"{n:02x}{counter[0]:014x}"
    end = start + (10 * size(node) + 10) * 1_000_000
    attrs = {
        k: (f"session-{n}" if k == "gen_ai.conversation.id" else f"{k}-{n}") if v == "PRESENT" else v
        for k, v in node["attributes"].items()
    }
    at = start + 1_000_000
    for child in node["children"]:
        walk(child, n, trace_id, span_id, at, spans, logs, counter)
        at += (10 * size(child) + 10) * 1_000_000 + 1_000_000
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": node["name"],
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attributes(attrs),
        "status": {"code": STATUS[node["status"]]},
    }
    if parent:
        span["parentSpanId"] = parent
    spans.append(span)
    for i, log in enumerate(node.get("logs", [])):
        logs.append(
            {
                "timeUnixNano": str(start + (i + 1) * 100_000),
                "traceId": trace_id,
                "spanId": span_id,
                "eventName": log["event_name"],
                "body": value(log["body"]),
                "attributes": attributes(log["attributes"]),
            }
        )


def main():
    resource = {"attributes": attributes({"service.name": "adk-telemetry-goldens"})}
    scope = {"name": "gcp.vertex.agent"}
    with open(sys.argv[1], "w") as out:
        for n, path in enumerate(sys.argv[2:], start=1):
            golden = json.load(open(path))
            spans, logs = [], []
            start = BASE_NS + n * 10_000_000_000
            walk(golden["root_span"], n, f"{n:032x}", "", start, spans, logs, [0])
            traces = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}]}
            out.write(json.dumps(traces, separators=(",", ":")) + "\n")
            if logs:
                records = {"resourceLogs": [{"resource": resource, "scopeLogs": [{"scope": scope, "logRecords": logs}]}]}
                out.write(json.dumps(records, separators=(",", ":")) + "\n")


main()
