#!/bin/bash
# The allocator suite's workloads (bench/runtime/suite.c, on malloc) under librasp-malloc
# (preloaded, sampling on at its default mean, no session), mimalloc and glibc, RUNS times
# each (default 3), interleaved so machine noise hits all alike: median wall time, CPU time
# and peak RSS (the workload's own, as suite.c reports them), and librasp-malloc's ratios to
# mimalloc from the same run (docs/performance.md, "librasp-malloc").
# Usage: [WORKLOADS="mixed ..."] bench/malloc/suite.sh BUILD_DIR [RUNS]
set -euo pipefail
BUILD=$(cd "${1:?usage: suite.sh BUILD_DIR [RUNS]}" && pwd)
RUNS=${2:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/bench-malloc-suite
mkdir -p "$OUT"
CC=${CC:-cc}
CFLAGS="-O2 -g -std=c11 -Wall -Wextra -pthread"
$CC $CFLAGS "$SRC/bench/runtime/suite.c" -o "$OUT/suite-malloc"
mimalloc=$(ls /usr/lib/*/libmimalloc.so.2 | head -1)
declare -A PRELOAD=([rasp-malloc]=$BUILD/lib/librasp-malloc.so [mimalloc]=$mimalloc [glibc]="")
ALLOCS="rasp-malloc mimalloc glibc"
WORKLOADS=${WORKLOADS:-"mixed request prodcons scale1 scale2 fixed cache bulk large spread huge"}

run_one() { # alloc workload -> "wall cpu maxrss_kib" (the workload's own, as suite.c prints them)
	local a=$1 w=$2 args=() env=(RASP_SEED=1 RASP_SAMPLING=on)
	case $w in
	scale1) args=(scale 1) ;;
	scale2) args=(scale 2) ;;
	*) args=("$w") ;;
	esac
	[ -n "${PRELOAD[$a]}" ] && env+=(LD_PRELOAD="${PRELOAD[$a]}")
	env "${env[@]}" "$OUT/suite-malloc" "${args[@]}" | sed 's/[a-z_]*=//g' | cut -d' ' -f1-3
}
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN{if (y == 0) printf "-"; else printf "%.2f", x/y}'; }

printf "== medians of %s runs: wall s, CPU s, peak RSS MiB; librasp-malloc over mimalloc\n" "$RUNS"
printf "%-9s %23s %23s %23s %18s\n" workload rasp-malloc mimalloc glibc "wall / CPU / RSS"
for w in $WORKLOADS; do
	declare -A ws=() cs=() rs=() W C R
	for _ in $(seq "$RUNS"); do
		for a in $ALLOCS; do
			read -r wall cpu rss < <(run_one "$a" "$w")
			ws[$a]+="$wall " cs[$a]+="$cpu " rs[$a]+="$rss "
		done
	done
	printf "%-9s" "$w"
	for a in $ALLOCS; do
		W[$a]=$(tr ' ' '\n' <<<"${ws[$a]}" | grep . | median)
		C[$a]=$(tr ' ' '\n' <<<"${cs[$a]}" | grep . | median)
		R[$a]=$(tr ' ' '\n' <<<"${rs[$a]}" | grep . | median)
		printf " %7.3f %7.3f %7.1f" "${W[$a]}" "${C[$a]}" "$(awk -v k="${R[$a]}" 'BEGIN{print k/1024}')"
	done
	printf " %5s %5s %5s\n" "$(ratio "${W[rasp-malloc]}" "${W[mimalloc]}")" \
		"$(ratio "${C[rasp-malloc]}" "${C[mimalloc]}")" "$(ratio "${R[rasp-malloc]}" "${R[mimalloc]}")"
	unset ws cs rs W C R
done
