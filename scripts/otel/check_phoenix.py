"""Checks the spans `runlog export` posted to Arize Phoenix against runlog's own tables.

Usage: python check_phoenix.py RUNLOG LOGS PHOENIX_URL [--again SECONDS]

With --again (after the same logs were exported a second time): watches the span count for
SECONDS and fails if it ever differs from the first export's (the ids are deterministic, so
Phoenix must see the same spans again, not new ones).

Reads every span of PROJECT (default `default`) back through Phoenix's REST API
(`GET /v1/projects/{project}/spans`, paged), waiting until Phoenix has stored as many spans as
the export wrote (it ingests in the background), and compares them with what `runlog query
LOGS` says of the same logs: traces = root-session turns (plus subagent turns the tables do
not link, plus run attempts outside any turn); `invoke_agent` spans = turns, by state;
`chat` spans = model calls, with their token totals and the failed ones ERROR with
`error.type` = the error code; `execute_tool` spans = tool calls, by tool name; every chat
and tool span a child of its turn's span in the same trace, every subagent turn a child of
the turn that spawned it; `runlog.*` attributes on every turn. Prints the numbers compared,
and the total span count (for a second run to compare). Exits 1 listing every difference.
"""

import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter

runlog, logs, base = sys.argv[1:4]
again = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--again" else None
project = "default"
base = base.rstrip("/")


def query(sql):
    out = subprocess.run(
        [runlog, "query", logs, "--format", "json", sql],
        check=True, capture_output=True, text=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def one(sql):
    return query(sql)[0]["n"] or 0


# What the tables say.
turns = one("SELECT count(*) AS n FROM turns")
root_turns = one("SELECT count(*) AS n FROM turns WHERE session = root")
unlinked = one(
    "SELECT count(*) AS n FROM turns t WHERE session <> root AND NOT EXISTS ("
    " SELECT 1 FROM events e WHERE e.root = t.root AND e.session = t.session"
    " AND e.type = 'session/start' AND regexp_like(e.data, '\"parent_turn\":\"'))"
)
lone_runs = one(
    "SELECT count(*) AS n FROM runs r WHERE NOT EXISTS (SELECT 1 FROM turns t"
    " WHERE t.root = r.root AND t.session = t.root AND t.start_seq <= r.start_seq"
    " AND (t.end_seq IS NULL OR r.start_seq <= t.end_seq))"
)
model_calls = one("SELECT count(*) AS n FROM events WHERE type = 'model/end' AND turn IS NOT NULL")
model_errors = {
    (r["code"] or None): r["n"]
    for r in query("SELECT code, count(*) AS n FROM errors WHERE source = 'model' GROUP BY code")
}
tokens = query(
    "SELECT sum(input_tokens) AS i, sum(output_tokens) AS o FROM turns"
)[0]
tools = {
    r["name"]: r["n"]
    for r in query("SELECT name, count(*) AS n FROM tool_calls WHERE turn IS NOT NULL GROUP BY name")
}
states = Counter()
for r in query("SELECT state, count(*) AS n FROM turns GROUP BY state"):
    s = r["state"]
    s = "protocol_error" if s is None else ("unknown_outcome" if s == "UnknownOutcome" else s.lower())
    states[s] += r["n"]
failed_turns = states.get("failed", 0)
callbacks = one("SELECT count(*) AS n FROM callbacks WHERE turn IS NOT NULL")
runs = one("SELECT count(*) AS n FROM runs")
total = turns + model_calls + sum(tools.values()) + callbacks + runs


def fetch_spans():
    spans, cursor = [], None
    while True:
        url = f"{base}/v1/projects/{project}/spans?limit=1000"
        if cursor:
            url += f"&cursor={cursor}"
        with urllib.request.urlopen(url, timeout=60) as resp:
            page = json.load(resp)
        spans += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            return spans


problems = []

if again is not None:
    end = time.time() + again
    while time.time() < end:
        n = len(fetch_spans())
        if n != total:
            print(f"after a second export Phoenix holds {n} spans, expected {total}", file=sys.stderr)
            sys.exit(1)
        time.sleep(3)
    print(f"phoenix: still {total} spans {again:.0f} s after a second export")
    sys.exit(0)

# Phoenix stores posted spans in the background: wait for them (5 minutes at most).
started = time.time()
deadline = started + 300
while True:
    spans = fetch_spans()
    if len(spans) >= total or time.time() > deadline:
        break
    time.sleep(2)
print(f"  Phoenix stored the spans in {time.time() - started:.0f} s")


def check(what, got, want):
    if isinstance(got, dict):
        got, want = dict(sorted(got.items(), key=str)), dict(sorted(want.items(), key=str))
    print(f"  {what}: {got} (expected {want})")
    if got != want:
        problems.append(f"{what}: got {got}, expected {want}")


by_id = {s["context"]["span_id"]: s for s in spans}
kind = lambda s: s["attributes"].get("gen_ai.operation.name")
agents = [s for s in spans if kind(s) == "invoke_agent"]
chats = [s for s in spans if kind(s) == "chat"]
tool_spans = [s for s in spans if kind(s) == "execute_tool"]

check("spans", len(spans), total)
check("distinct span ids", len(by_id), total)
check("traces", len({s["context"]["trace_id"] for s in spans}), root_turns + unlinked + lone_runs)
check("invoke_agent spans", len(agents), turns)
check("invoke_agent spans without a parent", sum(1 for s in agents if not s["parent_id"]),
      root_turns + unlinked)
check("turn states (runlog.turn.state)", dict(Counter(s["attributes"].get("runlog.turn.state") for s in agents)),
      dict(states))
check("failed turns with status ERROR and error.type",
      sum(1 for s in agents if s["status_code"] == "ERROR" and "error.type" in s["attributes"]),
      failed_turns)
check("turns with runlog.turn.* and runlog.session",
      sum(1 for s in agents if {"runlog.turn.id", "runlog.turn.state", "runlog.session",
                                "runlog.turn.start_seq"} <= set(s["attributes"])), turns)
check("chat spans", len(chats), model_calls)
check("chat spans of Phoenix kind LLM", sum(1 for s in chats if s["span_kind"] == "LLM"), model_calls)
check("input tokens of chat spans",
      sum(s["attributes"].get("gen_ai.usage.input_tokens", 0) for s in chats), tokens["i"] or 0)
check("output tokens of chat spans",
      sum(s["attributes"].get("gen_ai.usage.output_tokens", 0) for s in chats), tokens["o"] or 0)
failed = [s for s in chats if s["status_code"] == "ERROR"]
check("failed chat spans by error.type",
      dict(Counter(s["attributes"].get("error.type") for s in failed)), model_errors)
check("failed chat spans with runlog.error.retried",
      sum(1 for s in failed if "runlog.error.retried" in s["attributes"]), sum(model_errors.values()))
check("execute_tool spans by gen_ai.tool.name",
      dict(Counter(s["attributes"].get("gen_ai.tool.name") for s in tool_spans)), tools)

orphans = 0
for s in chats + tool_spans:
    p = by_id.get(s["parent_id"] or "")
    if p is None or kind(p) != "invoke_agent" or p["context"]["trace_id"] != s["context"]["trace_id"]:
        orphans += 1
check("chat and tool spans not under their turn's span", orphans, 0)
nested = [s for s in agents if s["parent_id"]]
bad = sum(1 for s in nested if kind(by_id.get(s["parent_id"], {"attributes": {}})) != "invoke_agent")
check("subagent turns not under an invoke_agent span", bad, 0)
check("subagent turns nested", len(nested), turns - root_turns - unlinked)

if problems:
    print("Phoenix check failed:", file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)
print(f"phoenix: {len(spans)} spans checked")
