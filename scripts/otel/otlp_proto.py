"""Spans as OTLP protobuf, framed the way the OpenTelemetry Collector's file exporter writes
them with `format: proto`: each message preceded by its length as a 4-byte big-endian
unsigned integer (exporter/fileexporter, `exportMessageAsBuffer`). The message is an
`ExportTraceServiceRequest` (the same bytes as a `TracesData`).

As a module: `write_otlp_proto(spans, path)` writes the OpenTelemetry Python SDK's spans with
the SDK's own encoder (`encode_spans`), a few per message as a batching exporter sends them.

As a script: `python otlp_proto.py IN.jsonl OUT.binpb` turns OTLP JSON lines (one
`TracesData` per line, hex ids, as `otlp_json.py` writes them from the same encoder) into that
framing, one message per line, with protobuf's own JSON parser: the messages are the ones the
SDK's `encode_spans` produced, byte for byte as it serializes them.
"""

import base64
import json
import struct
import sys

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def frame(message):
    body = message.SerializeToString()
    return struct.pack(">I", len(body)) + body


def write_otlp_proto(spans, path, per_message=4):
    with open(path, "wb") as f:
        for i in range(0, len(spans), per_message):
            f.write(frame(encode_spans(spans[i : i + per_message])))


def base64_ids(o):
    """OTLP JSON spells trace and span ids in hex; protobuf's JSON parser reads bytes as base64."""
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                o[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                base64_ids(v)
    elif isinstance(o, list):
        for v in o:
            base64_ids(v)
    return o


def main():
    src, out = sys.argv[1], sys.argv[2]
    with open(src) as f, open(out, "wb") as w:
        for line in f:
            if line.strip():
                request = json_format.ParseDict(base64_ids(json.loads(line)), ExportTraceServiceRequest())
                w.write(frame(request))


if __name__ == "__main__":
    main()
