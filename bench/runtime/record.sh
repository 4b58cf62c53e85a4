#!/usr/bin/env bash
# End-to-end cost of recording (docs/performance.md): each workload run alone with sampling
# off, under `rasp record --no-stacks`, and under `rasp record` (stacks on, the default), at
# the default sampling mean (--no-malloc: the bench's own calls to librasp are measured, its
# libc malloc stays glibc's, as valgrind, the program rasp record runs, would otherwise get
# librasp-malloc). Instructions of the whole program under callgrind (stable on a
# shared machine: the events' serialization into LTTng's ring buffer is counted, the consumer
# daemon is another process), and the ratios; then bytes of trace per sample.
# Usage: [RUNS=5] bench/runtime/record.sh BUILD_DIR [BASE_BUILD_DIR]   (needs valgrind,
# lttng-tools, a built bench-alloc: bench/runtime/run.sh BUILD_DIR callgrind builds it). With
# BASE_BUILD_DIR (another build's librasp, e.g. a worktree of an older commit with its library
# built), the microbenchmarks are also run on that librasp under the same rasp record, and the
# difference in points printed: what a change to the runtime costs a recording.
set -euo pipefail
build=$(cd "${1:?usage: record.sh BUILD_DIR [BASE_BUILD_DIR]}" && pwd)
base=${2:+$(cd "$2" && pwd)}
out=$build/bench-runtime/record
rasp=$build/bin/rasp
rm -rf "$out" && mkdir -p "$out"
[ -x "$build/bench-runtime/bench-alloc-rasp" ] ||
  { echo "record.sh: run bench/runtime/run.sh $1 callgrind first (builds bench-alloc)" >&2; exit 2; }

instructions() { # the callgrind total in a callgrind log
  awk '/Collected :/ { print $NF }' "$1"
}
cg() { echo valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$1"; }

# BASE_ONLY=1: only the comparison with the base librasp (below).
[ -n "${BASE_ONLY:-}" ] && [ -n "$base" ] && set -- skip
# A trace's samples, as rasp report counts them (rasp record's summary counts only small traces).
samples_of() {
  "$rasp" report --format json "$1" 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["total"]["samples"])'
}
[ "${1:-}" = skip ] || {
printf "%-10s %14s %14s %14s %9s %9s %7s %10s\n" workload "off" "record" "record+stacks" \
  "record" "+stacks" samples "B/sample"
for w in small mixed docstore; do
  case $w in
    docstore) cmd=("$build/bin/rasp-docstore" --threads 1 --docs 5000) ;;
    *) cmd=("$build/bench-runtime/bench-alloc-rasp" "$w" 2000000) ;;
  esac
  RASP_SEED=1 RASP_SAMPLING=off $(cg "$out/$w-off.log") "${cmd[@]}" >/dev/null 2>&1
  "$rasp" record --no-malloc --seed 1 --no-stacks -o "$out/$w-nostacks.trace" -- \
    $(cg "$out/$w-nostacks.log") "${cmd[@]}" >/dev/null 2>"$out/$w-nostacks.rec"
  "$rasp" record --no-malloc --seed 1 -o "$out/$w-stacks.trace" -- \
    $(cg "$out/$w-stacks.log") "${cmd[@]}" >/dev/null 2>"$out/$w-stacks.rec"
  off=$(instructions "$out/$w-off.log")
  ns=$(instructions "$out/$w-nostacks.log")
  st=$(instructions "$out/$w-stacks.log")
  samples=$(samples_of "$out/$w-stacks.trace")
  bytes_ns=$(du -sb "$out/$w-nostacks.trace" | cut -f1)
  bytes_st=$(du -sb "$out/$w-stacks.trace" | cut -f1)
  awk -v w="$w" -v o="$off" -v n="$ns" -v s="$st" -v k="$samples" -v bn="$bytes_ns" -v bs="$bytes_st" \
    'BEGIN { printf "%-10s %14d %14d %14d %+8.2f%% %+8.2f%% %7d %4.0f/%4.0f\n", w, o, n, s,
             (n / o - 1) * 100, (s / o - 1) * 100, k, bn / (k ? k : 1), bs / (k ? k : 1) }'
done
echo "(record, +stacks: instructions against sampling off; B/sample: trace bytes per sample"
echo " without/with stacks, the state dump and metadata included)"
}

[ -n "$base" ] || exit 0
# The same bench against the base librasp (its rpath), both librasps' runs interleaved, RUNS
# times (default 5; medians): the allocator's purge ticks follow the wall clock, which
# callgrind slows by the machine's load, so one run's instructions move by up to ~1% of the
# program; medians of interleaved runs take the load's drift out of the difference.
runs=${RUNS:-5}
src=$(cd "$(dirname "$0")/../.." && pwd)
cc -O2 -g -std=c11 -DBENCH_RASP -I"$base/../include" -I"$src/include" -I"$base/generated" \
  "$src/bench/runtime/bench-alloc.c" -L"$base/lib" -lrasp -Wl,-rpath,"$base/lib" -lm -lpthread \
  -o "$out/bench-alloc-base"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
printf "%-10s %8s %14s %14s %9s %9s %7s\n" workload librasp "off" "record" "record" \
  "points" "samples"
for w in small mixed; do
  for ((r = 0; r < runs; r++)); do
    for which in base build; do
      bin=$build/bench-runtime/bench-alloc-rasp
      [ "$which" = base ] && bin=$out/bench-alloc-base
      RASP_SEED=1 RASP_SAMPLING=off $(cg "$out/$w-$which-off.log") "$bin" "$w" 2000000 >/dev/null 2>&1
      instructions "$out/$w-$which-off.log" >>"$out/$w-$which-off.runs"
      "$rasp" record --no-malloc --seed 1 --no-stacks -o "$out/$w-$which-$r.trace" -- \
        $(cg "$out/$w-$which.log") "$bin" "$w" 2000000 >/dev/null 2>"$out/$w-$which.rec"
      instructions "$out/$w-$which.log" >>"$out/$w-$which.runs"
    done
  done
  awk -v w="$w" -v bo="$(median <"$out/$w-base-off.runs")" -v br="$(median <"$out/$w-base.runs")" \
    -v o="$(median <"$out/$w-build-off.runs")" -v r="$(median <"$out/$w-build.runs")" \
    -v k="$(samples_of "$out/$w-build-$((runs - 1)).trace")" \
    'BEGIN { printf "%-10s %8s %14d %14d %+8.2f%%\n", w, "base", bo, br, (br / bo - 1) * 100;
             printf "%-10s %8s %14d %14d %+8.2f%% %+8.2f %7d\n", w, "build", o, r,
                    (r / o - 1) * 100, ((r / o) - (br / bo)) * 100, k }'
  for f in base-off base build-off build; do
    printf '  %-9s runs:' "$f"; tr '\n' ' ' <"$out/$w-$f.runs"; echo
  done
done
echo "(record --no-stacks against each librasp's own sampling off, medians of $runs interleaved"
echo " runs; points: build's minus base's)"
