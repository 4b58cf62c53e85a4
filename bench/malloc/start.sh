#!/bin/bash
# How soon a program runs under `rasp record`, and how long rasp record takes after it: the
# program is `date +%s.%N`, which prints the clock as its main runs; "to main" is that less the
# clock before rasp record started, "after" the clock when rasp record has returned less it.
# Medians of RUNS (default 10). Extra arguments go to rasp record (e.g. --no-stacks).
# Usage: bench/malloc/start.sh BUILD-DIR [RUNS] [RECORD-OPTIONS...] (docs/performance.md).
set -uo pipefail
build=${1:?usage: start.sh BUILD-DIR [RUNS] [RECORD-OPTIONS...]}
runs=${2:-10}
shift $(($# >= 2 ? 2 : 1))
rasp=$build/bin/rasp
[ -x "$rasp" ] || { echo "start.sh: no $rasp: build first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((r = 0; r < runs; r++)); do
	rm -rf "$work/trace"
	a=$(date +%s.%N)
	b=$("$rasp" record -o "$work/trace" "$@" -- date +%s.%N 2>"$work/err") ||
		{ echo "start.sh: rasp record failed:" >&2; cat "$work/err" >&2; exit 1; }
	c=$(date +%s.%N)
	echo "$a $b $c" | awk '{ printf "%.1f %.1f\n", ($2 - $1) * 1000, ($3 - $2) * 1000 }'
done >"$work/times"
median() { sort -n -k"$1" "$work/times" | awk -v c="$1" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'; }
echo "rasp record ${*:-(defaults)}: to main $(median 1) ms, after $(median 2) ms (medians of $runs)"
