#!/usr/bin/env python3
"""Builds an OpenCode session database (`opencode.db`, releases from 1.2.0) from a folder of
OpenCode's pre-1.2 JSON session storage, as OpenCode's own migration moves it: each session,
message and part document becomes a row of the table of that name, its ids as columns and,
for messages and parts, the rest of the document as the `data` column.

The tables are those of anomalyco/opencode @063e8306d9895af9bdd175306cfa4fa3291fd83a
`packages/opencode/src/session/session.sql.ts` (`Timestamps` = `time_created`,
`time_updated`; the `session` table has no `data` column: a session is its columns).

Usage: scripts/opencode-db-fixture.py STORAGE_DIR OUT.db
(the golden cases' databases: tests/samples/opencode-db/<name>/opencode.db from
tests/samples/opencode-storage/<name>/storage).
"""
import json
import os
import sqlite3
import sys

SCHEMA = """
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer,
  `summary_deletions` integer, `summary_files` integer, `summary_diffs` text,
  `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
  `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL,
  `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL,
  `revert` text, `permission` text, `goal` text, `agent` text, `model` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer);
CREATE TABLE `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (
  `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
"""


def docs(storage, folder):
    """The documents under storage/<folder>/*/*.json, in path order."""
    root = os.path.join(storage, folder)
    if not os.path.isdir(root):
        return []
    out = []
    for sub in sorted(os.listdir(root)):
        for name in sorted(os.listdir(os.path.join(root, sub))):
            if name.endswith(".json"):
                with open(os.path.join(root, sub, name), encoding="utf-8") as f:
                    out.append(json.load(f))
    return out


def created(doc, fallback):
    t = doc.get("time") or {}
    return t.get("created") or t.get("start") or fallback


def main(storage, out):
    if os.path.exists(out):
        os.remove(out)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    con = sqlite3.connect(out)
    con.executescript(SCHEMA)
    times = {}
    for s in docs(storage, "session"):
        t = s.get("time", {})
        summary = s.get("summary") or {}
        con.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
            " share_url, summary_additions, summary_deletions, summary_files, time_created,"
            " time_updated, time_compacting, time_archived)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (s["id"], s.get("projectID", ""), s.get("parentID"), s.get("slug", ""),
             s.get("directory", ""), s.get("title", ""), s.get("version", ""),
             (s.get("share") or {}).get("url"), summary.get("additions"),
             summary.get("deletions"), summary.get("files"), t.get("created", 0),
             t.get("updated", t.get("created", 0)), t.get("compacting"), t.get("archived")))
        times[s["id"]] = t.get("created", 0)
    for m in docs(storage, "message"):
        data = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
        at = created(m, times.get(m["sessionID"], 0))
        times[m["id"]] = at
        con.execute("INSERT INTO message VALUES (?,?,?,?,?)",
                    (m["id"], m["sessionID"], at, at, json.dumps(data, ensure_ascii=False)))
    for p in docs(storage, "part"):
        data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
        at = created(p, times.get(p["messageID"], 0))
        con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)",
                    (p["id"], p["messageID"], p["sessionID"], at, at,
                     json.dumps(data, ensure_ascii=False)))
    con.commit()
    con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
