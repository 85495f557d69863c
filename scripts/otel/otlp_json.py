"""Spans of the OpenTelemetry Python SDK written as OTLP JSON lines, the way the OpenTelemetry
Collector's file exporter writes them: one `TracesData` object per line, trace and span ids in
hex, 64-bit integers as strings, enums as integers. Spans go out a few per line, in the order
they ended (children before their parents), as a batching exporter sends them."""

import base64
import json

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans


def hex_ids(o):
    """protobuf's JSON spells bytes in base64; OTLP JSON spells trace and span ids in hex."""
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                o[k] = base64.b64decode(v).hex()
            else:
                hex_ids(v)
    elif isinstance(o, list):
        for v in o:
            hex_ids(v)
    return o


def write_otlp_json(spans, path, per_line=4):
    with open(path, "w") as f:
        for i in range(0, len(spans), per_line):
            request = encode_spans(spans[i : i + per_line])
            doc = json_format.MessageToDict(request, use_integers_for_enums=True)
            f.write(json.dumps(hex_ids(doc), separators=(",", ":")) + "\n")
