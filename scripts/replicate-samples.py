#!/usr/bin/env python3
"""Replicates tests/samples (the real source formats) to a target size, with renamed ids.

    scripts/replicate-samples.py OUT [MB]        (default 200 MB)

Copy k goes to OUT/copy-NNNNN/ with the samples' tree. In each copy every UUID (in file
names, folder names and text) has its last group mixed with k, consistently across the
copy's files (Claude Code's subagent folder, parent references), and the harness's real
session ids (`sdk-snapshot-*`) get a `-cN` suffix; placeholder ids (`{{sessionId}}`) fall
back to the file's path, which differs per copy. So every copy holds distinct roots and
sessions. SOURCES.md and the harness's `*.expected.*` captures are copied as they are
(ingest reads them too: the captures are formats of their own).
"""
import os, re, sys

UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)([0-9a-f]{12})")
SDK = re.compile(r"(sdk-snapshot-[A-Za-z0-9-]+)")


def rename(text, k):
    text = UUID.sub(lambda m: m.group(1) + "%012x" % ((int(m.group(2), 16) ^ (k * 0x9E3779B97F4A + k)) & 0xFFFFFFFFFFFF), text)
    return SDK.sub(lambda m: "%s-c%d" % (m.group(1), k), text)


def main():
    out = sys.argv[1]
    target = float(sys.argv[2] if len(sys.argv) > 2 else 200) * 1e6
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "samples")
    files = []
    for d, _, names in os.walk(src):
        for n in sorted(names):
            if n.endswith(".jsonl"):
                p = os.path.join(d, n)
                files.append((os.path.relpath(p, src), open(p, encoding="utf-8").read()))
    one = sum(len(t.encode()) for _, t in files)
    copies = max(1, int(-(-target // one)))
    total = 0
    for k in range(copies):
        base = os.path.join(out, "copy-%05d" % k)
        for rel, text in files:
            p = os.path.join(base, rename(rel, k))
            os.makedirs(os.path.dirname(p), exist_ok=True)
            data = rename(text, k).encode()
            with open(p, "wb") as f:
                f.write(data)
            total += len(data)
    print("%d copies of %d files (%.2f MB each): %.1f MB" % (copies, len(files), one / 1e6, total / 1e6))


if __name__ == "__main__":
    main()
