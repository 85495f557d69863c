#!/usr/bin/env bash
# The daily-append scenario: a >= 2 GB rotated, persisted log in DAYS files
# (each a day's time window, agents running across days), appended one day at a time with
# `runlog ingest --append`; then day DAYS's append against a full re-ingest of all the days,
# and the bytes each wrote. Checks that both warehouses hold the same tables (md5 of ordered
# dumps, scripts/table-md5.sh). Run it alone on the machine (it prints the load).
#
#   scripts/bench-append.sh
#   AGENTS=216000   agents of the log (persisted mix: ~9.3 KB each, ~2 GB)
#   DAYS=30         files (days) of the log
#   WORK=DIR        where the log and the warehouses go (default: a temporary folder; the
#                   log is kept and reused when it is there)
#   BIN=...         the binary (default: $CARGO_TARGET_DIR/release/runlog, built if missing)
#   CHECK=0         skip the md5 comparison of the two warehouses
set -euo pipefail
AGENTS=${AGENTS:-216000}
DAYS=${DAYS:-30}
WORK=${WORK:-$(mktemp -d -t runlog-bench-append.XXXXXX)}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/runlog}
CHECK=${CHECK:-1}
[ -x "$BIN" ] || cargo build --release
load() { cut -d' ' -f1-3 /proc/loadavg; }
mkdir -p "$WORK"
logs="$WORK/logs"
if [ ! -d "$logs" ]; then
  echo "== generating $AGENTS agents in $DAYS rotated files ($(load))" >&2
  "$BIN" gen --agents "$AGENTS" --seed 1 --files "$DAYS" --layout rotated --mix persisted --out "$logs" 2>&1 | tail -1 >&2
fi
mapfile -t days < <(find "$logs" -name '*.jsonl' | sort)
total=$(du -cb "${days[@]}" | tail -1 | cut -f1)
echo "log: ${#days[@]} days, $((total / 1000000)) MB, load $(load)"
wh="$WORK/wh-append"
rm -rf "$wh"
# Each append's wall time, peak RSS and the bytes of the files it wrote (from its output).
for ((d = 0; d < ${#days[@]}; d++)); do
  out=$( { /usr/bin/time -f "TIME %e %M" "$BIN" ingest --append "${days[$d]}" -w "$wh" --keep-versions 2 --retention 0s; } 2>&1 )
  secs=$(echo "$out" | awk '/^TIME/ {print $2}')
  rss=$(echo "$out" | awk '/^TIME/ {print int($3 / 1024)}')
  bytes=$(echo "$out" | sed -n 's/.*wrote [0-9]* bucket(s), \([0-9]*\) bytes.*/\1/p')
  again=$(echo "$out" | grep -c "read every input again" || true)
  printf "day %2d  append %6.2f s  RSS %5d MB  wrote %7.1f MB%s\n" $((d + 1)) "$secs" "$rss" \
    "$(echo "${bytes:-0} / 1000000" | bc -l)" "$([ "$again" -gt 0 ] && echo '  (read every input again)')"
  [ $d -eq $((${#days[@]} - 1)) ] && last="$secs $rss ${bytes:-0}"
done
size=$(du -sb "$wh" | cut -f1)
full="$WORK/wh-full"
rm -rf "$full"
out=$( { /usr/bin/time -f "TIME %e %M" "$BIN" ingest "$logs" -w "$full" --keep-versions 1 --retention 0s; } 2>&1 )
fsecs=$(echo "$out" | awk '/^TIME/ {print $2}')
frss=$(echo "$out" | awk '/^TIME/ {print int($3 / 1024)}')
fbytes=$(du -sb "$full" | cut -f1)
read -r lsecs lrss lbytes <<< "$last"
echo
printf "day %d's append: %.2f s, RSS %d MB, wrote %.1f MB (of a %d MB warehouse)\n" "${#days[@]}" "$lsecs" "$lrss" "$(echo "$lbytes / 1000000" | bc -l)" $((size / 1000000))
printf "full re-ingest of all %d days: %.2f s, RSS %d MB, wrote %d MB\n" "${#days[@]}" "$fsecs" "$frss" $((fbytes / 1000000))
printf "append / full: time %.2fx, bytes %.3fx; load %s\n" "$(echo "$lsecs / $fsecs" | bc -l)" "$(echo "$lbytes / $fbytes" | bc -l)" "$(load)"
if [ "$CHECK" = 1 ]; then
  here=$(dirname "$0")
  if diff <("$here/table-md5.sh" "$wh" "$BIN") <("$here/table-md5.sh" "$full" "$BIN") > /dev/null; then
    echo "tables: the appended warehouse equals the full ingest (md5 of ordered dumps)"
  else
    echo "tables DIFFER between $wh and $full" >&2
    exit 1
  fi
fi
