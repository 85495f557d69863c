"""Checks runlog's tables of an ingested OTLP file against what the agents were asked to do.

Usage: python check_tables.py RUNLOG WAREHOUSE EXPECTED.json

EXPECTED.json is written by the producer script (e.g. pydantic_ai_agents.py): the turns
(agent, root or subagent session, state, finish reason, model calls, token totals), the errors
(agent, source, code, HTTP status, retried, recovered) and the tool calls (name, call id,
status). Turns are matched to agents by the `gen_ai.agent.name` (OpenInference: `agent.name`) their
`turn/start` carries.
Exits 1 listing every difference.
"""

import json
import subprocess
import sys
from collections import Counter

runlog, warehouse, expected_path = sys.argv[1:4]
expected = json.load(open(expected_path))


def query(sql):
    out = subprocess.run(
        [runlog, "query", "--warehouse", warehouse, "--format", "json", sql],
        check=True, capture_output=True, text=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


agent_of = {}
for row in query("SELECT root, turn, data FROM events WHERE type = 'turn/start'"):
    data = json.loads(row["data"])
    attrs = data.get("attributes", {})
    agent_of[(row["root"], row["turn"])] = attrs.get("gen_ai.agent.name") or attrs.get("agent.name")

finish_of = {
    (r["root"], r["open_seq"]): r["finish_reason"]
    for r in query("SELECT root, open_seq, finish_reason FROM intervals")
}

problems = []


def compare(what, want, got):
    want_c, got_c = Counter(want), Counter(got)
    for item in sorted(set(want_c) | set(got_c), key=repr):
        if want_c[item] != got_c[item]:
            problems.append(f"{what}: expected {want_c[item]}x, got {got_c[item]}x: {item}")


turns = query(
    "SELECT root, turn, is_root, interval_open_seq, state, stop_reason, model_calls, "
    "input_tokens, output_tokens FROM turns"
)
got_turns = []
for t in turns:
    finish = finish_of.get((t["root"], t["interval_open_seq"])) if t["is_root"] else None
    if not t["is_root"]:
        finish = {"Completed": t["stop_reason"] or "completed", "Failed": "error"}.get(t["state"])
    got_turns.append((
        agent_of.get((t["root"], t["turn"])), "root" if t["is_root"] else "subagent", t["state"],
        finish, t["model_calls"], t["input_tokens"], t["output_tokens"],
    ))
compare("turn", [
    (x["agent"], x["session"], x["state"], x["finish_reason"], x["model_calls"], x["input_tokens"], x["output_tokens"])
    for x in expected["turns"]
], got_turns)

errors = query("SELECT root, turn, source, code, http_status, retried, recovered FROM errors")
compare("error", [
    (x["agent"], x["source"], x["code"], x["http_status"], x["retried"], x["recovered"]) for x in expected["errors"]
], [
    (agent_of.get((e["root"], e["turn"])), e["source"], e["code"], e["http_status"], e["retried"], e["recovered"])
    for e in errors
])

compare("tool call", [(x["name"], x["call_id"], x["status"]) for x in expected["tool_calls"]], [
    (c["name"], c["call_id"], c["status"]) for c in query("SELECT name, call_id, status FROM tool_calls")
])

totals = query("SELECT SUM(input_tokens) AS i, SUM(output_tokens) AS o FROM turns")[0]
want_totals = (sum(x["input_tokens"] for x in expected["turns"]), sum(x["output_tokens"] for x in expected["turns"]))
if (totals["i"], totals["o"]) != want_totals:
    problems.append(f"token totals: expected {want_totals}, got {(totals['i'], totals['o'])}")

rejects = query("SELECT COUNT(*) AS n FROM rejects")[0]["n"]
if rejects:
    problems.append(f"{rejects} rejected lines")

for p in problems:
    print(p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"ok: {len(turns)} turns, {len(errors)} errors, {sum(1 for _ in expected['tool_calls'])} tool calls, "
      f"tokens in/out {want_totals[0]}/{want_totals[1]}")
