#!/usr/bin/env bash
# Throughput and memory of `runlog collect` under concurrent exporters: a receiver on a new
# warehouse, THREADS exporters posting pre-encoded protobuf requests of PER spans
# (scripts/otel/collect_load.py, each waiting for its answer), SPANS spans in all; then
# SIGTERM. Prints the acknowledged spans per second, the receiver's CPU time (which other
# processes on the machine disturb less than its spans per second) and peak RSS, and its
# commits; with CHECK=1 also compares every table with a file ingest of the spool (md5 of
# ordered dumps, scripts/table-md5.sh). Prints the load: the machine may be shared.
#
#   scripts/bench-collect.sh
#   SPANS=100000    spans in all
#   THREADS=16      concurrent exporters
#   PER=1000        spans per request (whole traces of 4 spans)
#   FLUSH=1         --flush-secs of the receiver
#   PY=python3      a Python with opentelemetry-proto (pip install opentelemetry-proto)
#   BIN=...         the binary (default: $CARGO_TARGET_DIR/release/runlog)
#   WORK=DIR        where the warehouses go (default: a temporary folder, removed)
#   CHECK=0         skip the comparison with a file ingest
set -euo pipefail
SPANS=${SPANS:-100000}
THREADS=${THREADS:-16}
PER=${PER:-1000}
FLUSH=${FLUSH:-1}
PY=${PY:-python3}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/runlog}
CHECK=${CHECK:-1}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release)" >&2; exit 1; }
if [ -z "${WORK:-}" ]; then
  WORK=$(mktemp -d -t runlog-bench-collect.XXXXXX)
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
rm -rf "$WORK/wh" "$WORK/file-wh"
load() { cut -d' ' -f1-3 /proc/loadavg; }
requests=$(( (SPANS + THREADS * PER - 1) / (THREADS * PER) ))
echo "load before: $(load); $(nproc) cores"
/usr/bin/time -f "TIME %e %M %U %S" "$BIN" collect -w "$WORK/wh" --listen 127.0.0.1:0 \
  --flush-secs "$FLUSH" --keep-versions 2 --retention 0s 2> "$WORK/collect.err" &
timer=$!
addr=""
for _ in $(seq 1 600); do
  addr=$(sed -n 's/.*listening on http:\/\/\([^ ]*\).*/\1/p' "$WORK/collect.err" | head -1)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { cat "$WORK/collect.err" >&2; exit 1; }
receiver=$(pgrep -P "$timer")
"$PY" "$here/otel/collect_load.py" "http://$addr" --threads "$THREADS" --requests "$requests" --spans "$PER"
echo "load after: $(load)"
kill -TERM "$receiver"
wait "$timer" || true
commits=$(grep -c "runlog collect: committed" "$WORK/collect.err" || true)
echo "commits: $commits; the last three:"
grep "runlog collect: committed" "$WORK/collect.err" | tail -3
awk '/^TIME/ {printf "receiver: %.2f s wall, %.2f s CPU (%.2f user, %.2f system), peak RSS %d MB\n",
  $2, $4 + $5, $4, $5, $3 / 1024}' "$WORK/collect.err"
du -sh "$WORK/wh/_collect" | awk '{print "spool: " $1}'
if [ "$CHECK" = 1 ]; then
  spool=$(cd "$WORK/wh/_collect" && pwd -P)
  "$BIN" ingest -q -w "$WORK/file-wh" "$spool"
  if diff <("$here/table-md5.sh" "$WORK/wh" "$BIN") <("$here/table-md5.sh" "$WORK/file-wh" "$BIN"); then
    echo "tables: equal to a file ingest of the spool (md5 of every table)"
  else
    echo "tables: DIFFER from a file ingest of the spool" >&2
    exit 1
  fi
fi
