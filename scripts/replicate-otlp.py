#!/usr/bin/env python3
"""Replicates the OTLP JSON agent samples (tests/samples/otlp/, real Pydantic AI and OpenAI
Agents SDK output) into one Collector-style file of a target size, with renamed ids.

    scripts/replicate-otlp.py OUT.jsonl [MB]        (default 57 MB)

Copy k of each sample has every trace id, span id and UUID mixed with k, so every copy holds
distinct traces, spans and conversations; the copies' lines follow each other in one file, as
the Collector's file exporter writes one stream.
"""
import os, re, sys

UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)([0-9a-f]{12})")
ID = re.compile(r'("(?:traceId|spanId|parentSpanId)":")([0-9a-f]{8})')


def rename(text, k):
    mix = (k * 0x9E3779B9 + k) & 0xFFFFFFFF
    text = UUID.sub(lambda m: m.group(1) + "%012x" % ((int(m.group(2), 16) ^ (k * 0x9E3779B97F4A + k)) & 0xFFFFFFFFFFFF), text)
    return ID.sub(lambda m: m.group(1) + "%08x" % (int(m.group(2), 16) ^ mix), text)


def main():
    out = sys.argv[1]
    target = float(sys.argv[2] if len(sys.argv) > 2 else 57) * 1e6
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "samples", "otlp")
    texts = [open(os.path.join(src, n), encoding="utf-8").read()
             for n in ("openai_agents.jsonl", "pydantic_ai_agents.jsonl")]
    total, k = 0, 0
    with open(out, "wb") as f:
        while total < target:
            for t in texts:
                data = rename(t, k).encode()
                f.write(data)
                total += len(data)
            k += 1
    print("%d copies: %.1f MB" % (k, total / 1e6))


if __name__ == "__main__":
    main()
