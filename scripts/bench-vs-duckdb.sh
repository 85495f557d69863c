#!/usr/bin/env bash
# runlog vs DuckDB on the same generated log, run alternately, medians and ratios.
#
#   scripts/bench-vs-duckdb.sh [AGENTS] [RUNS]     (defaults: 5500 agents ≈ 1.1M events, 3 runs)
#
# Builds runlog in release if needed, installs duckdb with pip if missing, generates the log
# with `runlog gen` into a scratch folder, then times, alternately:
#   A. runlog ingest (all tables, reduced, written)  vs  DuckDB COPY of the JSONL to one Parquet file
#   B. runlog query LOGS "finish reasons" (from raw files)  vs  DuckDB window-function query
# and checks that B gives the same counts in both. Peak RSS comes from /usr/bin/time when present.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${1:-5500}
RUNS=${2:-3}
BIN=target/release/runlog
[ -x "$BIN" ] || cargo build --release
python3 -c 'import duckdb' 2>/dev/null || pip install --quiet duckdb
WORK=$(mktemp -d /tmp/runlog-vs-duckdb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/logs"
"$BIN" gen --agents "$AGENTS" --seed 1 --files 4 --out "$WORK/logs"
SIZE=$(du -sb "$WORK/logs" | cut -f1)

cat > "$WORK/duck.py" <<'PY'
import duckdb, sys, time
mode, logs, out = sys.argv[1], sys.argv[2], sys.argv[3]
cols = "columns={seq:'BIGINT', ts:'TIMESTAMPTZ', root:'VARCHAR', session:'VARCHAR', turn:'VARCHAR', type:'VARCHAR', data:'JSON'}"
src = f"read_ndjson('{logs}/*.jsonl', {cols})"
con = duckdb.connect()
if mode == "copy":
    con.execute(f"COPY (SELECT * FROM {src}) TO '{out}' (FORMAT parquet)")
else:
    q = f"""
    WITH ev AS (SELECT root, session, seq, type, data FROM {src}),
    b AS (
      SELECT *, coalesce(count(*) FILTER (WHERE type = 'agent/idle') OVER (
                 PARTITION BY root ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS blk
      FROM ev),
    o AS (
      SELECT *, min(seq) FILTER (WHERE type = 'inbox/receipt' AND session = root)
                  OVER (PARTITION BY root, blk) AS open_seq
      FROM b),
    iv AS (
      SELECT root, blk, any_value(open_seq) AS open_seq,
             max(seq) FILTER (WHERE type = 'agent/idle') AS close_seq,
             arg_max(CASE WHEN json_type(data, '$.reason.kind') = 'VARCHAR'
                          THEN json_extract_string(data, '$.reason.kind') ELSE '\\u0000malformed' END, seq)
               FILTER (WHERE type = 'turn/end' AND session = root AND seq > open_seq) AS last_kind
      FROM o WHERE open_seq IS NOT NULL GROUP BY root, blk)
    SELECT CASE WHEN close_seq IS NULL OR last_kind = '\\u0000malformed' THEN NULL ELSE last_kind END AS finish_reason,
           count(*) AS n
    FROM iv GROUP BY 1 ORDER BY 2 DESC, 1"""
    rows = con.execute(q).fetchall()
    with open(out, "w") as f:
        for r in rows:
            f.write(f"{r[0] if r[0] is not None else ''},{r[1]}\n")
PY

TIME=""
[ -x /usr/bin/time ] && TIME="/usr/bin/time -f %M -o $WORK/rss"
t() { # prints seconds; peak RSS (KiB) into $WORK/rss_<name>
  local name=$1; shift
  local s e
  s=$(date +%s.%N)
  $TIME "$@" > /dev/null 2> "$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  e=$(date +%s.%N)
  [ -f "$WORK/rss" ] && cp "$WORK/rss" "$WORK/rss_$name"
  echo "$e - $s" | bc
}
declare -A T
for i in $(seq "$RUNS"); do
  T[ingest]+=" $(t ingest "$BIN" ingest "$WORK/logs" --warehouse "$WORK/wh" -q)"
  T[copy]+=" $(t copy python3 "$WORK/duck.py" copy "$WORK/logs" "$WORK/x.parquet")"
  T[query]+=" $(t query "$BIN" query "$WORK/logs" "SELECT finish_reason, count(*) AS n FROM intervals GROUP BY 1" -f csv)"
  T[window]+=" $(t window python3 "$WORK/duck.py" window "$WORK/logs" "$WORK/duck.csv")"
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
"$BIN" query "$WORK/logs" "SELECT finish_reason, count(*) AS n FROM intervals GROUP BY 1 ORDER BY 2 DESC, 1" -f csv | tail -n +2 | sort > "$WORK/runlog.csv"
sort "$WORK/duck.csv" > "$WORK/duck.sorted"
if diff -q "$WORK/runlog.csv" "$WORK/duck.sorted" > /dev/null; then SAME=yes; else SAME=NO; diff "$WORK/runlog.csv" "$WORK/duck.sorted" | head >&2; fi
mi=$(echo "${T[ingest]}" | median); mc=$(echo "${T[copy]}" | median)
mq=$(echo "${T[query]}" | median); mw=$(echo "${T[window]}" | median)
rss() { [ -f "$WORK/rss_$1" ] && echo "$(( $(cat "$WORK/rss_$1") / 1024 )) MB" || echo "-"; }
echo
echo "log: $AGENTS agents, $(( SIZE / 1000000 )) MB in 4 files; $RUNS runs each, alternating; $(nproc) cores"
printf "%-44s %8s %8s %10s\n" "task" "median s" "ratio" "peak RSS"
printf "%-44s %8.3f %8s %10s\n" "runlog ingest (all tables, written)" "$mi" "$(echo "scale=2; $mi / $mc" | bc)x" "$(rss ingest)"
printf "%-44s %8.3f %8s %10s\n" "duckdb COPY jsonl -> parquet" "$mc" "1x" "$(rss copy)"
printf "%-44s %8.3f %8s %10s\n" "runlog query finish reasons (raw files)" "$mq" "$(echo "scale=2; $mq / $mw" | bc)x" "$(rss query)"
printf "%-44s %8.3f %8s %10s\n" "duckdb window query finish reasons" "$mw" "1x" "$(rss window)"
echo "finish-reason counts identical: $SAME"
echo "every run (s): ingest${T[ingest]} | copy${T[copy]} | query${T[query]} | window${T[window]}"
