#!/bin/sh
# Runtime benchmarks (docs/performance.md): builds bench-alloc once per allocator against a
# built librasp, then prints (1) instructions per small allocation under callgrind, sampling
# on and off and the peers, (1b) the slow path's cost per entry, apart (slowpath.py), (2) mixed allocate/free throughput with ratios to glibc malloc,
# (3) the overhead of sampling at the default mean under a recording LTTng session, (4) the
# instructions one AllocationSampled costs the allocating thread with EventPipe on, LTTng on,
# or neither, and the EventPipe writer thread's share per event (callgrind), (5) the unwinders
# at depth D (default 30), (6) the cost of a sample with and without its stack in rasp
# record's session, and what each context adds.
# Usage: bench/runtime/run.sh BUILD_DIR [callgrind|slowpath|mixed|lttng|emit|unwind|stacks|all]
# (Debian packages: valgrind, libjemalloc-dev, libmimalloc-dev, libunwind-dev; lttng-tools
# with a running session daemon)
set -eu
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR [what]}" && pwd)
WHAT=${2:-all}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/bench-runtime
mkdir -p "$OUT"
CC=${CC:-cc}
CFLAGS="-O2 -g -std=c11 -Wall -Wextra"
$CC $CFLAGS -DBENCH_RASP -I"$SRC/include" -I"$BUILD/generated" "$SRC/bench/runtime/bench-alloc.c" \
	-L"$BUILD/lib" -lrasp -Wl,-rpath,"$BUILD/lib" -o "$OUT/bench-alloc-rasp"
$CC $CFLAGS -DBENCH_RASP -DBENCH_RASP_INLINE -I"$SRC/include" -I"$BUILD/generated" \
	"$SRC/bench/runtime/bench-alloc.c" -L"$BUILD/lib" -lrasp -Wl,-rpath,"$BUILD/lib" \
	-o "$OUT/bench-alloc-rasp-inline"
$CC $CFLAGS "$SRC/bench/runtime/bench-alloc.c" -o "$OUT/bench-alloc-glibc"
$CC $CFLAGS -DNAME='"jemalloc"' "$SRC/bench/runtime/bench-alloc.c" -ljemalloc -o "$OUT/bench-alloc-jemalloc"
$CC $CFLAGS -DBENCH_MIMALLOC "$SRC/bench/runtime/bench-alloc.c" -lmimalloc -o "$OUT/bench-alloc-mimalloc"
export RASP_SEED=1

# Inclusive instructions of the measured loop per allocation; for rasp also the self cost of
# rasp_alloc per call (its fast path; slow paths are in rasp__alloc_slow).
callgrind_one() { # label env... -- binary
	label=$1; shift
	f=$OUT/callgrind.$label.out
	env "$@" RASP_LTTNG=0 valgrind --tool=callgrind --callgrind-out-file="$f" \
		"$OUT/bench-alloc-$BIN" fastpath $N >/dev/null 2>&1
	incl=$(callgrind_annotate --inclusive=yes "$f" | grep -m1 'run_fastpath' | awk '{gsub(",","",$1); print $1}')
	frees=$(callgrind_annotate --inclusive=yes "$f" | grep -m1 'run_frees' | awk '{gsub(",","",$1); print $1}')
	line="$label: $(awk -v i="$incl" -v n=$N 'BEGIN{printf "%.2f", i/n}') instructions/allocation (loop inclusive)"
	line="$line, $(awk -v i="$frees" -v n=$N 'BEGIN{printf "%.2f", i/n}') instructions/free (run_frees, inclusive)"
	if [ "$BIN" = rasp ]; then
		# (summed over the source files its lines come from: alloc.c and the headers it inlines)
		self=$(callgrind_annotate --inclusive=no --threshold=100 --auto=no "$f" |
			awk '/ [^ ]*:rasp_alloc( \[|$)/ {gsub(",","",$1); s+=$1} END{print s+0}')
		line="$line, rasp_alloc self $(awk -v i="$self" -v n=$N 'BEGIN{printf "%.3f", i/n}')/call"
	fi
	echo "$line"
}

if [ "$WHAT" = all ] || [ "$WHAT" = callgrind ]; then
	N=${N:-1000000}
	echo "== callgrind: $N allocations of 32 payload bytes, then their frees in that order"
	BIN=rasp callgrind_one rasp-sampling-off RASP_SAMPLING=off
	BIN=rasp callgrind_one rasp-sampling-on RASP_SAMPLING=on
	BIN=rasp-inline callgrind_one rasp-inline-sampling-off RASP_SAMPLING=off
	BIN=rasp-inline callgrind_one rasp-inline-sampling-on RASP_SAMPLING=on
	BIN=glibc callgrind_one glibc-malloc
	BIN=jemalloc callgrind_one jemalloc
	BIN=mimalloc callgrind_one mimalloc
fi

best_of() { # runs... -> best ns/op of 5 runs
	best=
	for _ in 1 2 3 4 5; do
		v=$("$@" | awk '/ns\/op=/{for(i=1;i<=NF;i++) if ($i ~ /^ns\/op=/) {sub("ns/op=","",$i); print $i}}')
		if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$v; fi
	done
	echo "$best"
}

# (1b) The slow path, measured apart (docs/performance.md, "Allocator"): N allocate/free
# pairs of Z bytes (4096 live, replaced at random), sampling off then on at the default mean.
if [ "$WHAT" = all ] || [ "$WHAT" = slowpath ]; then
	N=${N:-1000000}
	Z=${Z:-2048}
	echo "== callgrind: the slow path, $N allocate/free pairs of $Z bytes"
	for m in off on; do
		RASP_SAMPLING=$m RASP_LTTNG=0 valgrind --tool=callgrind \
			--callgrind-out-file="$OUT/callgrind.slow-$m.out" \
			"$OUT/bench-alloc-rasp" fixed "$N" "$Z" >/dev/null 2>&1
	done
	python3 "$SRC/bench/runtime/slowpath.py" "$OUT/callgrind.slow-off.out" \
		"$OUT/callgrind.slow-on.out" "$N"
fi

if [ "$WHAT" = all ] || [ "$WHAT" = mixed ]; then
	M=${M:-20000000}
	echo "== mixed allocate/free, $M pairs, 4096 live, sizes 8..8192 (best of 5, ns/op)"
	g=$(best_of "$OUT/bench-alloc-glibc" mixed $M)
	for b in glibc jemalloc mimalloc rasp; do
		if [ $b = glibc ]; then
			v=$g
		elif [ $b = rasp ]; then
			v=$(RASP_SAMPLING=off RASP_LTTNG=0 best_of "$OUT/bench-alloc-rasp" mixed $M)
		else
			v=$(best_of "$OUT/bench-alloc-$b" mixed $M)
		fi
		awk -v b=$b -v v="$v" -v g="$g" 'BEGIN{printf "%-9s %7.2f ns/op  %.3f x glibc\n", b, v, v/g}'
	done
fi

if [ "$WHAT" = all ] || [ "$WHAT" = lttng ]; then
	M=${M:-20000000}
	S=rasp-bench-$$
	W=${W:-small}
	echo "== sampling overhead, $W workload, $M pairs: RASP_SAMPLING=off vs auto under a session (median of 7)"
	lttng create $S --output="$OUT/trace-$S" >/dev/null
	lttng enable-channel -u -s $S --subbuf-size=1M --num-subbuf=8 ch0 >/dev/null
	lttng enable-event -u -s $S -c ch0 DotNETRuntime:AllocationSampled,Rasp_Runtime:SamplingConfigured >/dev/null
	lttng start $S >/dev/null
	offs=; ons=
	for _ in 1 2 3 4 5 6 7; do
		offs="$offs $(RASP_SAMPLING=off "$OUT/bench-alloc-rasp" $W $M | awk -F'ns/op=' '/ns\/op/{split($2,a," "); print a[1]}')"
		ons="$ons $(RASP_SAMPLING=auto "$OUT/bench-alloc-rasp" $W $M | awk -F'ns/op=' '/ns\/op/{split($2,a," "); print a[1]}')"
	done
	samples=$(RASP_SAMPLING=auto "$OUT/bench-alloc-rasp" $W $M | awk '/samples=/{print $2}')
	lttng stop $S >/dev/null
	lttng destroy $S >/dev/null
	rm -rf "$OUT/trace-$S"
	med() { echo "$@" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
	mo=$(med $offs); mn=$(med $ons)
	awk -v o="$mo" -v n="$mn" -v s="$samples" 'BEGIN{printf "off %.2f ns/op, auto+session %.2f ns/op: ratio %.4f (%+.2f%%); %s per run\n", o, n, n/o, (n/o-1)*100, s}'
fi

# Inclusive instructions of one function per call of it (callgrind output, calls counted by
# the number of samples the program reports).
per_sample() { # file function samples
	incl=$(callgrind_annotate --inclusive=yes "$1" | grep -m1 ":$2 " | awk '{gsub(",","",$1); print $1}')
	awk -v i="${incl:-0}" -v n="$3" 'BEGIN{printf "%.0f", i/n}'
}

if [ "$WHAT" = all ] || [ "$WHAT" = emit ]; then
	N=${N:-200000}
	S=rasp-emit-$$
	echo "== callgrind: instructions per AllocationSampled (mean 1 KiB, $N allocations of 32 bytes)"
	run_emit() { # label env...
		label=$1; shift
		f=$OUT/callgrind.emit-$label.out
		samples=$(env "$@" RASP_SAMPLING=on RASP_SAMPLING_MEAN=1024 valgrind --tool=callgrind \
			--callgrind-out-file="$f" "$OUT/bench-alloc-rasp" fastpath $N 2>/dev/null |
			awk '/samples=/{sub("samples=","",$2); print $2}')
		printf "%-10s %5s instructions/sample on the allocating thread" "$label" \
			"$(per_sample "$f" rasp_event_allocation_sampled "$samples")"
		if [ "$label" = eventpipe ]; then
			printf ", writer thread %s/event" "$(per_sample "$f" writer_main "$samples")"
		fi
		echo " ($samples samples)"
	}
	run_emit neither RASP_LTTNG=0
	run_emit eventpipe RASP_LTTNG=0 DOTNET_EnableEventPipe=1 \
		DOTNET_EventPipeOutputPath="$OUT/emit.nettrace" \
		DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4
	lttng create $S --output="$OUT/trace-$S" >/dev/null
	lttng enable-event -u -s $S DotNETRuntime:AllocationSampled,Rasp_Runtime:SamplingConfigured >/dev/null
	lttng start $S >/dev/null
	run_emit lttng LTTNG_UST_REGISTER_TIMEOUT=-1
	lttng stop $S >/dev/null
	lttng destroy $S >/dev/null
	rm -rf "$OUT/trace-$S" "$OUT/emit.nettrace"
fi

# Unwinders (runtime/stack.c says which one and why): ns per walk of a stack DEPTH calls deep.
if [ "$WHAT" = all ] || [ "$WHAT" = unwind ]; then
	D=${D:-30}
	$CC $CFLAGS -fno-omit-frame-pointer -fno-optimize-sibling-calls "$SRC/bench/runtime/unwind.c" \
		-o "$OUT/unwind-glibc"
	$CC $CFLAGS -fno-omit-frame-pointer -fno-optimize-sibling-calls -DWITH_LIBUNWIND \
		"$SRC/bench/runtime/unwind.c" -lunwind -o "$OUT/unwind-libunwind"
	echo "== unwinders, a stack $D calls deep (+ main and libc's frames), 20000 walks each"
	"$OUT/unwind-glibc" "$D"
	"$OUT/unwind-libunwind" "$D" | grep libunwind
fi

# The cost of a sample with and without its stack, in the session rasp record sets up
# (contexts vpid, vtid, procname), and what each context adds: callgrind, instructions per
# sample on the allocating thread (rasp__emit_sample inclusive: capture, ClrStackWalk,
# AllocationSampled), mean 1 KiB; then ns per sample from timed runs (median of 5 each).
if [ "$WHAT" = all ] || [ "$WHAT" = stacks ]; then
	N=${N:-200000}
	S=rasp-stacks-$$
	session() { # events context...
		lttng create $S --output="$OUT/trace-$S" >/dev/null
		lttng enable-channel -u -s $S --subbuf-size=4M --num-subbuf=8 ch0 >/dev/null
		lttng enable-event -u -s $S -c ch0 "$1" >/dev/null
		shift
		for c in "$@"; do lttng add-context -u -s $S -c ch0 -t "$c" >/dev/null; done
		lttng start $S >/dev/null
	}
	end_session() { lttng destroy $S >/dev/null; rm -rf "$OUT/trace-$S"; }
	run_sample() { # label env...
		label=$1; shift
		f=$OUT/callgrind.stacks-$label.out
		samples=$(env "$@" LTTNG_UST_REGISTER_TIMEOUT=-1 RASP_SAMPLING=on RASP_SAMPLING_MEAN=1024 \
			valgrind --tool=callgrind --callgrind-out-file="$f" "$OUT/bench-alloc-rasp" \
			fastpath $N 2>/dev/null | awk '/samples=/{sub("samples=","",$2); print $2}')
		printf "%-34s %6s instructions/sample (capture %s, ClrStackWalk %s, AllocationSampled %s)\n" \
			"$label" "$(per_sample "$f" rasp__emit_sample "$samples")" \
			"$(per_sample "$f" rasp__stack_capture "$samples")" \
			"$(per_sample "$f" rasp_event_clr_stack_walk "$samples")" \
			"$(per_sample "$f" rasp_event_allocation_sampled "$samples")"
	}
	EV=DotNETRuntime:AllocationSampled,Rasp_Runtime:SamplingConfigured
	echo "== callgrind: instructions per sample (mean 1 KiB, $N allocations of 32 bytes)"
	session $EV; run_sample "no contexts, no stacks" RASP_STACKS=0; end_session
	session $EV vtid; run_sample "vtid, no stacks" RASP_STACKS=0; end_session
	session $EV vpid vtid procname; run_sample "vpid vtid procname, no stacks" RASP_STACKS=0; end_session
	session $EV,DotNETRuntime:ClrStackWalk vtid; run_sample "vtid, stacks" RASP_STACKS=1; end_session
	session $EV,DotNETRuntime:ClrStackWalk vpid vtid procname
	run_sample "vpid vtid procname, stacks" RASP_STACKS=1
	T=$((N * 10))
	echo "== ns per sample, stacks on against off ($T allocations of 32 bytes, mean 1 KiB, median of 5)"
	offs=; ons=
	for _ in 1 2 3 4 5; do
		offs="$offs $(RASP_STACKS=0 RASP_SAMPLING=on RASP_SAMPLING_MEAN=1024 "$OUT/bench-alloc-rasp" fastpath $T | awk -F'ns/op=' '/ns\/op/{split($2,a," "); print a[1]}')"
		ons="$ons $(RASP_STACKS=1 RASP_SAMPLING=on RASP_SAMPLING_MEAN=1024 "$OUT/bench-alloc-rasp" fastpath $T | awk -F'ns/op=' '/ns\/op/{split($2,a," "); print a[1]}')"
	done
	samples=$(RASP_SAMPLING=on RASP_SAMPLING_MEAN=1024 "$OUT/bench-alloc-rasp" fastpath $T | awk '/samples=/{sub("samples=","",$2); print $2}')
	end_session
	med() { echo "$@" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
	awk -v o="$(med $offs)" -v n="$(med $ons)" -v s="$samples" -v t="$T" 'BEGIN{
		printf "stacks off %.2f ns/allocation, on %.2f: %.0f ns more per sample (%d samples)\n",
			o, n, (n - o) * t / s, s }'
fi
