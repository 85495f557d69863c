#!/usr/bin/env bash
# runlog vs DuckDB on generated logs of every layout × mix, run alternately, medians, ratios
# measured in the same run, and peak RSS of both.
#
#   scripts/bench-vs-duckdb.sh [RUNS]            (default 3 runs of each, alternating)
#
# Settings (environment):
#   MB=200        size of each corner's log (agents are chosen per mix to reach it)
#   FILES=8       files per log
#   CORNERS="by-agent:deltas rotated:deltas scattered:deltas by-agent:persisted rotated:persisted scattered:persisted"
#                 (CORNERS="" BIG=1: the big corners only)
#   QUERY=1       also time the finish-reasons query from raw files (runlog query LOGS
#                 queries/finish_reasons.sql vs DuckDB's window query) and check the counts,
#                 and `runlog report LOGS` (every question of the report) beside it
#   BIG=0         1: add scattered+persisted and rotated+persisted at BIG_MB (long: minutes each)
#   BIG_MB=2000   size of the big corners; BIG_FILES=16
#   SAMPLES=1     also time `runlog ingest` of tests/samples replicated with renamed ids to
#                 SAMPLES_MB=200 (DuckDB cannot read those formats: MB/s only)
#   BIN=target/release/runlog (built with `cargo build --release` if missing; honours
#                 CARGO_TARGET_DIR)
#   WORK=dir      keep the logs there (default: a scratch folder removed at exit)
#
# How each side is timed:
#   runlog: the whole process, as a user runs it (wall clock around the command; peak RSS
#           from /usr/bin/time).
#   DuckDB: in-process: Python's time.perf_counter() around the statement only (COPY of
#           read_ndjson with explicit columns to one Parquet file; or the window query as a
#           DuckDB user writes it: only the three event types the answer depends on are
#           fed to the window, the rest filtered out while the files are scanned). The
#           interpreter's start, `import duckdb` and connect are never timed. Its peak RSS is
#           ru_maxrss after the statement: that includes the interpreter's and DuckDB's
#           baseline (ru_maxrss after import+connect, printed beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-${RUNS:-3}}
MB=${MB:-200}
FILES=${FILES:-8}
CORNERS=${CORNERS-"by-agent:deltas rotated:deltas scattered:deltas by-agent:persisted rotated:persisted scattered:persisted"}
QUERY=${QUERY:-1}
BIG=${BIG:-0}
BIG_MB=${BIG_MB:-2000}
BIG_FILES=${BIG_FILES:-16}
SAMPLES=${SAMPLES:-1}
SAMPLES_MB=${SAMPLES_MB:-200}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/runlog}
[ -x "$BIN" ] || cargo build --release
python3 -c 'import duckdb' 2>/dev/null || pip install --quiet duckdb
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time) for peak RSS" >&2; exit 1; }
if [ -n "${WORK:-}" ]; then mkdir -p "$WORK"; else
  WORK=$(mktemp -d /tmp/runlog-vs-duckdb.XXXXXX)
  trap 'rm -rf "$WORK"' EXIT
fi

cat > "$WORK/duck.py" <<'PY'
import duckdb, resource, sys, time
mode, logs, out = sys.argv[1], sys.argv[2], sys.argv[3]
cols = "columns={seq:'BIGINT', ts:'TIMESTAMPTZ', root:'VARCHAR', session:'VARCHAR', turn:'VARCHAR', type:'VARCHAR', data:'JSON'}"
src = f"read_ndjson('{logs}/*.jsonl', {cols})"
con = duckdb.connect()
con.execute("SELECT 1").fetchall()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode == "copy":
    q = f"COPY (SELECT * FROM {src}) TO '{out}' (FORMAT parquet)"
    t = time.perf_counter()
    con.execute(q)
    secs = time.perf_counter() - t
else:
    q = f"""
    WITH ev AS (SELECT root, session, seq, type, data FROM {src}
                WHERE type IN ('agent/idle', 'inbox/receipt', 'turn/end')),
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
    t = time.perf_counter()
    rows = con.execute(q).fetchall()
    secs = time.perf_counter() - t
    with open(out, "w") as f:
        for r in rows:
            f.write(f"{r[0] if r[0] is not None else ''},{r[1]}\n")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{secs:.4f} {peak} {base}")
PY

load() { cut -d' ' -f1-3 /proc/loadavg; }
busy() { # other processes using CPU now (not ours): the top 3 by CPU
  ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 > 20 {printf "%s(%s%%) ", $2, $1}' | head -c 200
}
# runlog, as a whole process: prints "seconds peak_kib"
rl() {
  local s e
  s=$(date +%s.%N)
  /usr/bin/time -f %M -o "$WORK/rss" "$@" > /dev/null 2> "$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  e=$(date +%s.%N)
  echo "$(echo "$e - $s" | bc) $(cat "$WORK/rss")"
}
# DuckDB in-process: prints "seconds peak_kib baseline_kib"
dk() { python3 "$WORK/duck.py" "$@" 2> "$WORK/err" || { cat "$WORK/err" >&2; exit 1; }; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
col() { awk -v c="$1" '{print $c}' | median; } # median of column c over the runs' lines
mb() { echo "$(( $1 / 1024 ))"; }

agents_for() { # agents for ~$2 MB of mix $1 (deltas: 5500 agents ≈ 211 MB; persisted: ≈ 9.3 KB/agent)
  case $1 in
    deltas) echo $(( $2 * 26 )) ;;
    persisted) echo $(( $2 * 1075 / 10 )) ;;
  esac
}

RESULTS="$WORK/results.txt"
: > "$RESULTS"
echo "runlog $("$BIN" --version 2>/dev/null | head -1) at $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+dirty'); $(nproc) cores; DuckDB $(python3 -c 'import duckdb; print(duckdb.__version__)')"
echo "load at start: $(load); busy: $(busy)"

corner() { # layout mix mb files
  local layout=$1 mix=$2 size=$3 files=$4
  local agents logs
  agents=$(agents_for "$mix" "$size")
  logs="$WORK/logs-$layout-$mix-$size"
  if [ ! -d "$logs" ]; then
    "$BIN" gen --agents "$agents" --seed 1 --files "$files" --layout "$layout" --mix "$mix" --out "$logs" 2> /dev/null
  fi
  local bytes events
  bytes=$(du -sb "$logs" | cut -f1)
  events=$(cat "$logs"/*.jsonl | wc -l)
  local l0; l0=$(load)
  : > "$WORK/t_ingest"; : > "$WORK/t_copy"; : > "$WORK/t_query"; : > "$WORK/t_window"; : > "$WORK/t_report"
  for _ in $(seq "$RUNS"); do
    rm -rf "$WORK/wh"
    rl "$BIN" ingest "$logs" --warehouse "$WORK/wh" -q >> "$WORK/t_ingest"
    rm -f "$WORK/x.parquet"
    dk copy "$logs" "$WORK/x.parquet" >> "$WORK/t_copy"
    if [ "$QUERY" = 1 ]; then
      rl "$BIN" query "$logs" queries/finish_reasons.sql -f csv >> "$WORK/t_query"
      dk window "$logs" "$WORK/duck.csv" >> "$WORK/t_window"
      rl "$BIN" report "$logs" >> "$WORK/t_report"
    fi
  done
  rm -rf "$WORK/wh" "$WORK/x.parquet"
  local mi mc ri rc rb
  mi=$(col 1 < "$WORK/t_ingest"); ri=$(col 2 < "$WORK/t_ingest")
  mc=$(col 1 < "$WORK/t_copy"); rc=$(col 2 < "$WORK/t_copy"); rb=$(col 3 < "$WORK/t_copy")
  local line
  line=$(printf "%-10s %-9s %6d MB %9d ev | ingest %7.3f s  COPY %7.3f s  %5.2fx | RSS %5d MB / %5d MB (base %d)" \
    "$layout" "$mix" $(( bytes / 1000000 )) "$events" "$mi" "$mc" "$(echo "scale=3; $mi / $mc" | bc)" \
    "$(mb "$ri")" "$(mb "$rc")" "$(mb "$rb")")
  if [ "$QUERY" = 1 ]; then
    local mq mw rq rw mr same
    mq=$(col 1 < "$WORK/t_query"); rq=$(col 2 < "$WORK/t_query")
    mr=$(col 1 < "$WORK/t_report")
    mw=$(col 1 < "$WORK/t_window"); rw=$(col 2 < "$WORK/t_window")
    "$BIN" query "$logs" "SELECT finish_reason, count(*) AS n FROM intervals GROUP BY 1" -f csv \
      | tail -n +2 | sort > "$WORK/runlog.csv"
    sort "$WORK/duck.csv" > "$WORK/duck.sorted"
    if diff -q "$WORK/runlog.csv" "$WORK/duck.sorted" > /dev/null; then same=yes; else same=NO; diff "$WORK/runlog.csv" "$WORK/duck.sorted" | head >&2; fi
    line+=$(printf " | query %6.3f s  window %6.3f s  %5.2fx | RSS %4d / %4d MB | same counts: %s | report %6.3f s = %4.2fx query" \
      "$mq" "$mw" "$(echo "scale=3; $mq / $mw" | bc)" "$(mb "$rq")" "$(mb "$rw")" "$same" "$mr" "$(echo "scale=3; $mr / $mq" | bc)")
  fi
  line+=" | load $l0 -> $(load)"
  echo "$line" | tee -a "$RESULTS"
  echo "  runs (s): ingest $(cut -d' ' -f1 "$WORK/t_ingest" | tr '\n' ' ')| copy $(cut -d' ' -f1 "$WORK/t_copy" | tr '\n' ' ')$( [ "$QUERY" = 1 ] && echo "| query $(cut -d' ' -f1 "$WORK/t_query" | tr '\n' ' ')| window $(cut -d' ' -f1 "$WORK/t_window" | tr '\n' ' ')| report $(cut -d' ' -f1 "$WORK/t_report" | tr '\n' ' ')")"
  [ -n "${KEEP_LOGS:-}" ] || rm -rf "$logs"
}

echo
echo "layout     mix           size    events | runlog ingest (whole process) vs DuckDB COPY (statement in-process), medians of $RUNS alternating | peak RSS runlog / DuckDB (DuckDB's includes its baseline: interpreter + import + connect)"
for c in $CORNERS; do
  corner "${c%%:*}" "${c##*:}" "$MB" "$FILES"
done
if [ "$BIG" = 1 ]; then
  for c in scattered:persisted rotated:persisted; do
    corner "${c%%:*}" "${c##*:}" "$BIG_MB" "$BIG_FILES"
  done
fi

if [ "$SAMPLES" = 1 ]; then
  S="$WORK/samples"
  [ -d "$S" ] || python3 scripts/replicate-samples.py "$S" "$SAMPLES_MB" > /dev/null
  bytes=$(du -sb "$S" | cut -f1)
  : > "$WORK/t_samples"
  for _ in $(seq "$RUNS"); do
    rm -rf "$WORK/wh"
    rl "$BIN" ingest "$S" --warehouse "$WORK/wh" -q >> "$WORK/t_samples"
  done
  ms=$(col 1 < "$WORK/t_samples"); rs=$(col 2 < "$WORK/t_samples")
  agents=$("$BIN" query --warehouse "$WORK/wh" "SELECT count(*) FROM agents" -f csv | tail -1)
  printf "samples    (real formats, replicated with renamed ids) %d MB, %s agents | ingest %.3f s = %.0f MB/s | RSS %d MB | load %s\n" \
    $(( bytes / 1000000 )) "$agents" "$ms" "$(echo "$bytes / 1000000 / $ms" | bc -l)" "$(mb "$rs")" "$(load)" | tee -a "$RESULTS"
  rm -rf "$WORK/wh"
fi
echo
echo "load at end: $(load); busy: $(busy)"
