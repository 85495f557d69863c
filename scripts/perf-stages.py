#!/usr/bin/env python3
"""Where an ingest's CPU goes, stage by stage over time, from a perf profile with call stacks.

    perf record -F 1500 --call-graph dwarf,16384 -o perf.data runlog ingest LOGS --warehouse WH -q
    perf script -i perf.data -F comm,tid,time,ip,sym | scripts/perf-stages.py [BUCKET_MS]

Prints the samples of each stage per bucket of time (50 ms by default), then the totals. A
sample's stage is the innermost frame of its stack that names one (generic arguments
stripped, so that a type named in a closure's signature does not count).
"""
import collections
import re
import sys

STAGES = [
    ("spill", r"spill::"),
    ("fingerprint", r"fingerprint::"),
    ("read", r"ingest::read::|decode::|DataArena|PayloadIndex"),
    ("assemble", r"assemble::"),
    ("reduce", r"reduce::"),
    ("events", r"store::EventColumns|write_events|plain_chunk|dictionary_chunk"),
    ("derived", r"derived_batch|store::write|ArrowWriter|arrow_writer"),
    ("commit", r"commit::"),
    ("snappy", r"snap::"),
    ("parquet", r"parquet::"),
]


def strip_generics(frame):
    for _ in range(4):
        frame = re.sub(r"<[^<>]*>", "", frame)
    return frame


def stage_of(frames):
    for frame in frames:
        f = strip_generics(frame)
        for name, pattern in STAGES:
            if re.search(pattern, f):
                return name
    return "other"


def main():
    bucket_ms = float(sys.argv[1]) if len(sys.argv) > 1 else 50.0
    buckets = collections.defaultdict(collections.Counter)
    totals = collections.Counter()
    t0 = None
    for sample in sys.stdin.read().split("\n\n"):
        lines = sample.strip().split("\n")
        if len(lines) < 2:
            continue
        t = float(lines[0].split()[2].rstrip(":"))
        t0 = t if t0 is None else t0
        name = stage_of(lines[1:])
        buckets[int((t - t0) * 1000 / bucket_ms)][name] += 1
        totals[name] += 1
    for k in sorted(buckets):
        print(f"{int(k * bucket_ms):6d} ms", dict(buckets[k].most_common(5)))
    n = sum(totals.values()) or 1
    print("samples", n, {k: f"{v} ({100 * v / n:.1f} %)" for k, v in totals.most_common()})


if __name__ == "__main__":
    main()
