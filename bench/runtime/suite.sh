#!/bin/bash
# The allocator suite (docs/performance.md, "Allocator"): every workload of suite.c and the
# demo (rasp-docstore; on the peers through malloc-shim.c) under rasp (sampling at its default
# mean, on; and off) and under glibc, jemalloc, tcmalloc and mimalloc, RUNS times each
# (default 3), in one run, interleaved so machine noise hits all alike. Prints the median wall
# time, CPU time and peak RSS, the ratios of rasp to each peer, and 2-thread scaling.
# (Instructions per allocation are bench/runtime/run.sh's, under callgrind.)
# rasp runs three ways: as installed (sampling on, the LTTng provider loaded at start so that
# sessions can enable its events: liblttng-ust's code and listener threads, a fixed cost);
# without the provider (RASP_LTTNG=0), the allocator alone; and that with sampling off. Peak
# RSS is also given as growth past the process's resident size before the workload (libraries
# and set-up), which is the allocator's own part.
# Usage: [PLOT=docs/img/allocator.png] [WORKLOADS="mixed ..."] bench/runtime/suite.sh BUILD_DIR [RUNS]
# (Debian packages: libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev valgrind; all
# installed by scripts/deps.sh --bench)
set -euo pipefail
BUILD=$(cd "${1:?usage: suite.sh BUILD_DIR [RUNS]}" && pwd)
RUNS=${2:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/bench-suite
mkdir -p "$OUT"
CC=${CC:-cc}
CFLAGS="-O2 -g -std=c11 -Wall -Wextra -pthread"
LIBDIR=/usr/lib/x86_64-linux-gnu
$CC $CFLAGS -DBENCH_RASP -I"$SRC/include" "$SRC/bench/runtime/suite.c" \
	-L"$BUILD/lib" -lrasp -Wl,-rpath,"$BUILD/lib" -o "$OUT/suite-rasp"
$CC $CFLAGS "$SRC/bench/runtime/suite.c" -o "$OUT/suite-malloc"
# The demo on malloc (the peers come in with LD_PRELOAD, as for suite-malloc).
$CC $CFLAGS -I"$SRC/include" -I"$SRC/examples" "$SRC/examples/docstore.c" \
	"$SRC/examples/docstore-json.c" "$SRC/bench/runtime/malloc-shim.c" -lm -o "$OUT/docstore-malloc"

declare -A PRELOAD=([glibc]="" [jemalloc]=$LIBDIR/libjemalloc.so.2
	[tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4 [mimalloc]=$LIBDIR/libmimalloc.so.2)
ALLOCS="rasp rasp-nolttng rasp-off glibc jemalloc tcmalloc mimalloc"
PEERS="glibc jemalloc tcmalloc mimalloc"
WORKLOADS=${WORKLOADS:-"mixed request prodcons scale1 scale2 fixed cache bulk large spread huge demo"}

run_one() { # alloc workload -> "wall cpu maxrss base" (base: resident KiB before the workload; 0 if unknown)
	local a=$1 w=$2 bin args=() env=(RASP_SEED=1)
	case $w in
	scale1) args=(scale 1) ;;
	scale2) args=(scale 2) ;;
	demo) args=(--threads 4 --docs 20000) ;;
	*) args=("$w") ;;
	esac
	case $a in
	rasp) env+=(RASP_SAMPLING=on) ;;
	rasp-nolttng) env+=(RASP_SAMPLING=on RASP_LTTNG=0) ;;
	rasp-off) env+=(RASP_SAMPLING=off RASP_LTTNG=0) ;;
	*) [ -n "${PRELOAD[$a]}" ] && env+=(LD_PRELOAD="${PRELOAD[$a]}") ;;
	esac
	if [ "$w" = demo ]; then
		case $a in rasp*) bin=$BUILD/bin/rasp-docstore ;; *) bin=$OUT/docstore-malloc ;; esac
		# Wall time from the shell's microsecond clock: time(1)'s %e has centiseconds,
		# 6% of the demo's 0.16 s. CPU time and peak RSS from time(1).
		local t0=$EPOCHREALTIME t1 out
		out=$(env "${env[@]}" /usr/bin/time -f "%U %S %M" "$bin" "${args[@]}" 2>&1 >/dev/null | tail -1)
		t1=$EPOCHREALTIME
		echo "$out" | awk -v a="$t0" -v b="$t1" '{printf "%.4f %.3f %s 0\n", b - a, $1 + $2, $3}'
	else
		case $a in rasp*) bin=$OUT/suite-rasp ;; *) bin=$OUT/suite-malloc ;; esac
		env "${env[@]}" "$bin" "${args[@]}" | sed 's/[a-z_]*=//g'
	fi
}

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

declare -A WALL CPU RSS GROW BASE
for w in $WORKLOADS; do
	declare -A ws=() cs=() rs=() gs=() bs=()
	for _ in $(seq "$RUNS"); do
		for a in $ALLOCS; do
			read -r wall cpu rss base < <(run_one "$a" "$w")
			ws[$a]+="$wall "; cs[$a]+="$cpu "; rs[$a]+="$rss "
			[ "$base" -gt 0 ] && gs[$a]+="$((rss - base)) " && bs[$a]+="$base "
		done
	done
	for a in $ALLOCS; do
		WALL[$w,$a]=$(tr ' ' '\n' <<<"${ws[$a]}" | grep . | median)
		CPU[$w,$a]=$(tr ' ' '\n' <<<"${cs[$a]}" | grep . | median)
		RSS[$w,$a]=$(tr ' ' '\n' <<<"${rs[$a]}" | grep . | median)
		GROW[$w,$a]=$(tr ' ' '\n' <<<"${gs[$a]:-}" | awk NF | median)
		BASE[$w,$a]=$(tr ' ' '\n' <<<"${bs[$a]:-}" | awk NF | median)
	done
	unset ws cs rs gs bs
done
ratio() { awk -v x="$1" -v y="$2" 'BEGIN{if (x == "" || y == "" || y == 0) printf "-"; else printf "%.2f", x/y}'; }

printf "== medians of %s runs: wall s / peak RSS MiB\n" "$RUNS"
printf "%-9s" workload; for a in $ALLOCS; do printf " %17s" "$a"; done; echo
for w in $WORKLOADS; do
	printf "%-9s" "$w"
	for a in $ALLOCS; do
		printf " %8.3f %8.1f" "${WALL[$w,$a]}" "$(awk -v k="${RSS[$w,$a]}" 'BEGIN{print k/1024}')"
	done
	echo
done
echo "== rasp as installed (sampling on, LTTng provider loaded) over each peer: wall ratio / peak RSS ratio"
printf "%-9s" workload; for a in $PEERS; do printf " %15s" "$a"; done; echo
for w in $WORKLOADS; do
	printf "%-9s" "$w"
	for a in $PEERS; do
		printf " %7s %7s" "$(ratio "${WALL[$w,rasp]}" "${WALL[$w,$a]}")" "$(ratio "${RSS[$w,rasp]}" "${RSS[$w,$a]}")"
	done
	echo
done
echo "== rasp without the provider (RASP_LTTNG=0, sampling on) over each peer: wall / peak RSS / RSS growth past the start"
printf "%-9s" workload; for a in $PEERS; do printf " %23s" "$a"; done; echo
for w in $WORKLOADS; do
	printf "%-9s" "$w"
	for a in $PEERS; do
		printf " %7s %7s %7s" "$(ratio "${WALL[$w,rasp-nolttng]}" "${WALL[$w,$a]}")" \
			"$(ratio "${RSS[$w,rasp-nolttng]}" "${RSS[$w,$a]}")" \
			"$(ratio "${GROW[$w,rasp-nolttng]}" "${GROW[$w,$a]}")"
	done
	echo
done
mib() { awk -v k="$1" 'BEGIN{if (k == "") print "-"; else printf "%.2f", k/1024}'; }
# A table of KiB figures in MiB, workloads by allocators, from the array named $1.
mib_table() {
	local -n kib=$1
	printf "%-9s" workload; for a in $ALLOCS; do printf " %12s" "$a"; done; echo
	for w in $WORKLOADS; do
		printf "%-9s" "$w"; for a in $ALLOCS; do printf " %12s" "$(mib "${kib[$w,$a]}")"; done; echo
	done
}
echo "== resident before the workload, MiB (libraries and set-up: rasp's LTTng provider is the"
echo "   difference between rasp and rasp-nolttng; '-': not measured, the demo)"
mib_table BASE
echo "== RSS growth past the start, MiB (what the allocator added; for rasp as installed it reads"
echo "   low: the provider's threads touched, before the start was read, library code that the"
echo "   workload would touch later, so compare growth without the provider)"
mib_table GROW
if [[ " $WORKLOADS " == *" scale1 "* && " $WORKLOADS " == *" scale2 "* ]]; then
	echo "== 2-thread over 1-thread wall time (scale2 / scale1), same total work"
	for a in $ALLOCS; do
		printf "%-9s %.2f\n" "$a" "$(awk -v x="${WALL[scale2,$a]}" -v y="${WALL[scale1,$a]}" 'BEGIN{print x/y}')"
	done
fi

# The plot (PLOT=FILE.png, needs gnuplot): rasp's wall time and peak RSS over each peer's.
if [ -n "${PLOT:-}" ]; then
	dat=$OUT/suite-ratios.dat
	for w in $WORKLOADS; do
		printf "%s" "$w"
		for m in WALL RSS; do
			for a in glibc jemalloc tcmalloc mimalloc; do
				if [ $m = WALL ]; then x=${WALL[$w,rasp]} y=${WALL[$w,$a]}; else x=${RSS[$w,rasp]} y=${RSS[$w,$a]}; fi
				printf " %s" "$(awk -v x="$x" -v y="$y" 'BEGIN{printf "%.3f", x/y}')"
			done
		done
		echo
	done >"$dat"
	gnuplot <<GP
set terminal pngcairo size 1000,640 font ",11"
set output "$PLOT"
set multiplot layout 2,1 title "rasp as installed (sampling on, LTTng provider loaded) over each allocator, medians of $RUNS runs"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8
set grid ytics
set yrange [0:*]
set key top left horizontal
set ylabel "wall time ratio"
plot "$dat" using 2:xtic(1) title "glibc" lc rgb "#3060a0", "" using 3 title "jemalloc" lc rgb "#c03030", \
     "" using 4 title "tcmalloc" lc rgb "#e0a020", "" using 5 title "mimalloc" lc rgb "#208040", \
     1 with lines lc rgb "#444444" dt 2 notitle
set ylabel "peak RSS ratio"
plot "$dat" using 6:xtic(1) title "glibc" lc rgb "#3060a0", "" using 7 title "jemalloc" lc rgb "#c03030", \
     "" using 8 title "tcmalloc" lc rgb "#e0a020", "" using 9 title "mimalloc" lc rgb "#208040", \
     1 with lines lc rgb "#444444" dt 2 notitle, 1.25 with lines lc rgb "#3060a0" dt 3 title "1.25"
unset multiplot
GP
	echo "wrote $PLOT"
fi
