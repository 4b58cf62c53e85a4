#!/usr/bin/env bash
# Plots (a) and (c) of docs/performance.md:
#  (a) sampling overhead against the sampling mean (4 KiB .. 16 MiB), as PyPy's allocation
#      sampling post plots it: bench-alloc's small and mixed workloads (and, for instructions,
#      the rasp-docstore demo, one thread), RASP_SAMPLING=off
#      against sampling at each mean while an LTTng session records the events: instructions
#      (callgrind, the events' serialization into the ring buffer included; stable) and time
#      (median of RUNS alternating runs per point; noisy on a shared machine);
#  (c) instructions per allocation (callgrind) for rasp with sampling off and on, glibc,
#      jemalloc and mimalloc on the same allocation sequence.
# Usage: bench/plots/overhead.sh BUILD_DIR [RUNS]   (needs gnuplot, valgrind, libjemalloc-dev,
# libmimalloc-dev, lttng-tools and a session daemon). Writes bench/plots/{overhead,instructions}.dat
# and docs/img/{overhead,instructions}.png.
set -euo pipefail
build=$(cd "${1:?usage: overhead.sh BUILD_DIR [RUNS]}" && pwd)
runs=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bench="$build/bench-runtime/bench-alloc-rasp"

# run.sh builds the four bench-alloc programs and measures (c).
N=${N:-1000000} "$root/bench/runtime/run.sh" "$build" callgrind | tee "$here/instructions.txt"
awk -F': ' '/instructions\/allocation/ { split($2, a, " ");
  sub("rasp-inline-sampling-off", "inline (off)", $1); sub("rasp-inline-sampling-on", "inline (on)", $1);
  sub("rasp-sampling-off", "rasp (off)", $1);
  sub("rasp-sampling-on", "rasp (on)", $1); sub("-malloc", "", $1); printf "\"%s\" %s\n", $1, a[1] }' \
  "$here/instructions.txt" > "$here/instructions.dat"

session="rasp-overhead-$$"
trap 'lttng destroy "$session" >/dev/null 2>&1 || true' EXIT
lttng create "$session" --output="$build/bench-runtime/trace-$session" >/dev/null
lttng enable-channel -u -s "$session" --subbuf-size=2M --num-subbuf=8 ch0 >/dev/null
lttng enable-event -u -s "$session" -c ch0 'DotNETRuntime:AllocationSampled,Rasp_Runtime:*' >/dev/null
lttng start "$session" >/dev/null

nsop() { "$@" | awk -F'ns/op=' '/ns\/op/ { split($2, a, " "); print a[1] }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# Instructions: callgrind counts the program's own work, the tracepoints' writes included
# (the consumer daemon that empties the buffers is another process).
cg() { # env... -> instructions of the whole run
  local cmd
  if [ "$workload" = docstore ]; then
    cmd=("$build/bin/rasp-docstore" --threads 1 --docs 5000)
  else
    cmd=("$bench" "$workload" 2000000)
  fi
  env "$@" LTTNG_UST_REGISTER_TIMEOUT=-1 RASP_SEED=1 valgrind --tool=callgrind \
    --callgrind-out-file=/dev/null "${cmd[@]}" 2>&1 | awk '/Collected :/ { print $NF }'
}
echo "# workload mean_bytes off_instructions on_instructions overhead_percent" > "$here/overhead-instructions.dat"
for workload in small mixed docstore; do
  base=$(cg RASP_SAMPLING=off)
  for mean in 4096 16384 65536 102400 262144 1048576 4194304 16777216; do
    on=$(cg RASP_SAMPLING=auto RASP_SAMPLING_MEAN=$mean)
    awk -v w="$workload" -v m="$mean" -v o="$base" -v n="$on" \
      'BEGIN { printf "%s %d %d %d %.2f\n", w, m, o, n, (n / o - 1) * 100 }' | tee -a "$here/overhead-instructions.dat"
  done
done

echo "# workload mean_bytes off_ns on_ns overhead_percent" > "$here/overhead.dat"
for workload in small mixed; do
  m_pairs=$([ "$workload" = small ] && echo 20000000 || echo 5000000)
  for mean in 4096 16384 65536 102400 262144 1048576 4194304 16777216; do
    offs= ons=
    for _ in $(seq "$runs"); do
      offs="$offs $(RASP_SAMPLING=off nsop "$bench" "$workload" "$m_pairs")"
      ons="$ons $(RASP_SAMPLING=auto RASP_SAMPLING_MEAN=$mean nsop "$bench" "$workload" "$m_pairs")"
    done
    off=$(echo "$offs" | median) on=$(echo "$ons" | median)
    awk -v w="$workload" -v m="$mean" -v o="$off" -v n="$on" \
      'BEGIN { printf "%s %d %.3f %.3f %.2f\n", w, m, o, n, (n / o - 1) * 100 }' | tee -a "$here/overhead.dat"
  done
done
lttng stop "$session" >/dev/null
echo "discarded events: $(lttng list "$session" | awk '/Discarded events:/ { n += $3 } END { print n + 0 }')"
lttng destroy "$session" >/dev/null
trap - EXIT
rm -rf "$build/bench-runtime/trace-$session"

gnuplot <<GP
set terminal pngcairo size 900,540 font ",11"
set output "$root/docs/img/overhead.png"
set logscale x 2
set format x "%.0b%B"
set xlabel "sampling mean (bytes between samples)"
set ylabel "overhead against sampling off (%)"
set title "Sampling overhead with an LTTng session recording the events"
set grid
set key top right
set yrange [-5:*]
plot "< grep '^small' $here/overhead-instructions.dat" using 2:5 with linespoints lw 2 pt 7 lc rgb "#3060a0" title "small objects (16-128 B), instructions", \
     "< grep '^mixed' $here/overhead-instructions.dat" using 2:5 with linespoints lw 2 pt 5 lc rgb "#c03030" title "mixed sizes (8 B-8 KiB), instructions", \
     "< grep '^docstore' $here/overhead-instructions.dat" using 2:5 with linespoints lw 2 pt 9 lc rgb "#208040" title "rasp-docstore (demo), instructions", \
     "< grep '^small' $here/overhead.dat" using 2:5 with points pt 6 ps 1.2 lc rgb "#3060a0" title "small, time (median of $runs)", \
     "< grep '^mixed' $here/overhead.dat" using 2:5 with points pt 4 ps 1.2 lc rgb "#c03030" title "mixed, time (median of $runs)", \
     0 with lines lc rgb "#888888" notitle
GP

gnuplot <<GP
set terminal pngcairo size 800,480 font ",11"
set output "$root/docs/img/instructions.png"
set style data histograms
set style fill solid 0.8
set boxwidth 0.7
set ylabel "instructions per allocation (callgrind)"
set title "Same sequence of 32-byte allocations, measured loop included"
set grid ytics
set yrange [0:*]
plot "$here/instructions.dat" using 2:xtic(1) notitle lc rgb "#3060a0", \
     "" using 0:2:(sprintf("%.1f", \$2)) with labels offset 0,1 notitle
GP
echo "wrote docs/img/overhead.png and docs/img/instructions.png"
