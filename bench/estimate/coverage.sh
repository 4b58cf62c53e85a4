#!/usr/bin/env bash
# Coverage of the intervals by simulation (docs/sampling.md, "Coverage by size mix"): builds
# bench/estimate/coverage.c against a build tree's estimator and runs it.
#   bench/estimate/coverage.sh [BUILD_DIR] [-- OPTIONS]     (build; options: --help)
#   bench/estimate/coverage.sh build --update-docs           the tables of docs/sampling.md
# The docs' tables: --reps 2000 --jobs 2, and --all for the second table; about 15 minutes
# on 2 cores.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
shift || true
update=0
if [ "${1:-}" = --update-docs ]; then
  update=1
  shift
fi
[ "${1:-}" = -- ] && shift
cc -O2 -g -std=c11 -D_POSIX_C_SOURCE=200809L -pthread -I"$src/consumer" -I"$src/include" \
  "$src/bench/estimate/coverage.c" "$build/consumer/librasp-estimate.a" -lm \
  -o "$build/rasp-bench-coverage"
if [ $update = 0 ]; then
  exec "$build/rasp-bench-coverage" "$@"
fi
# Replace what lies between the markers in docs/sampling.md with a fresh run.
doc=$src/docs/sampling.md
table=$(mktemp)
trap 'rm -f "$table" "$table.new"' EXIT
"$build/rasp-bench-coverage" --reps 2000 --jobs 2 --all >"$table"
awk -v table="$table" '
  /<!-- coverage:begin -->/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
  /<!-- coverage:end -->/ { skip = 0 }
  !skip { print }
' "$doc" >"$table.new"
grep -q '<!-- coverage:end -->' "$table.new" || { echo "coverage.sh: no markers in $doc" >&2; exit 1; }
cat "$table.new" >"$doc"
