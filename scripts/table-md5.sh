#!/usr/bin/env bash
# md5 of an ordered dump of every table of a warehouse, one line per table: compare two
# warehouses (before and after a change) with diff. Ordered by every column, so the dump does
# not depend on file or row order.
#
#   scripts/table-md5.sh WAREHOUSE [BIN]      (BIN defaults to target/release/runlog)
set -euo pipefail
WH=$1
BIN=${2:-${CARGO_TARGET_DIR:-target}/release/runlog}
for t in events intervals turns errors tool_calls callbacks runs agents files rejects; do
  # Every column, in order, as the sort key: "ORDER BY 1, 2, ..., n".
  n=$("$BIN" query --warehouse "$WH" "SELECT * FROM $t LIMIT 1" --format csv | head -1 | awk -F, '{print NF}')
  order=$(seq -s, 1 "$n")
  printf "%-11s %s\n" "$t" "$("$BIN" query --warehouse "$WH" "SELECT * FROM $t ORDER BY $order" --format csv | md5sum | cut -d' ' -f1)"
done
