#!/usr/bin/env bash
# The cost of sink.rasp.report: events per second through
#   babeltrace2 TRACE -c sink.rasp.report   against   babeltrace2 TRACE -o dummy
# on the same recorded trace (decoding alone), and the sink's own instructions per event
# from callgrind (difference of the two pipelines on a smaller trace, divided by events).
# Usage: bench/consumer/bench.sh [BUILD_DIR] [EVENTS] [CALLGRIND_EVENTS] [RUNS]
#   defaults: build-con 1000000 20000 5. Needs a session daemon (root or tracing group),
#   rasp-emit and the plugin built in BUILD_DIR, and valgrind for the instruction count.
# Traces go to BUILD_DIR/bench-consumer/ (large: never commit them).
set -euo pipefail

BUILD=$(cd "${1:-build-con}" && pwd)
EVENTS=${2:-1000000}
CG_EVENTS=${3:-20000}
RUNS=${4:-5}
OUT=$BUILD/bench-consumer
PLUGIN_DIR=$BUILD/lib/babeltrace2
EMIT=$BUILD/bin/rasp-emit
SESSION=rasp-bench-$$
mkdir -p "$OUT"

cleanup() { lttng destroy "$SESSION" >/dev/null 2>&1 || true; }
trap cleanup EXIT

# record DIR COUNT: COUNT AllocationSampled events from one rasp-emit, loss-free buffers
# (4 MiB x 8 per CPU); the filter keeps other programs of this user out of the trace.
record() {
  local dir=$1 count=$2
  rm -rf "$dir"
  lttng create "$SESSION" --output="$dir" >/dev/null
  lttng enable-channel -u -s "$SESSION" --subbuf-size=4M --num-subbuf=8 ch0 >/dev/null
  lttng enable-event -u -s "$SESSION" -c ch0 'DotNETRuntime:*,Rasp_Runtime:*' \
    --filter '$ctx.procname == "rasp-emit"' >/dev/null
  lttng add-context -u -s "$SESSION" -c ch0 -t vpid -t vtid -t procname >/dev/null
  lttng start "$SESSION" >/dev/null
  LTTNG_UST_REGISTER_TIMEOUT=-1 "$EMIT" -n "$count" >/dev/null
  lttng stop "$SESSION" >/dev/null
  local lost
  lost=$(lttng list "$SESSION" | sed -n 's/.*Discarded events: //p' | sort -u | tr '\n' ' ')
  lttng destroy "$SESSION" >/dev/null
  echo "recorded $count events into $dir ($(du -sh "$dir" | cut -f1)), discarded: $lost"
}

# best of RUNS wall-clock seconds of a command
best() {
  local best=999999 t0 t1
  for _ in $(seq "$RUNS"); do
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    best=$(python3 -c "print(min($best, $t1 - $t0))")
  done
  echo "$best"
}

BIG=$OUT/trace-$EVENTS
[ -f "$BIG/.complete" ] || { record "$BIG" "$EVENTS"; touch "$BIG/.complete"; }
DUMMY=(babeltrace2 "$BIG" -o dummy)
SINK=(babeltrace2 --plugin-path="$PLUGIN_DIR" "$BIG" -c sink.rasp.report -p 'output="/dev/null"')
echo "pipelines: ${DUMMY[*]}"
echo "           ${SINK[*]}"
t_dummy=$(best "${DUMMY[@]}")
t_sink=$(best "${SINK[@]}")
python3 - "$EVENTS" "$t_dummy" "$t_sink" <<'PY'
import sys
n, d, s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"decode only (-o dummy):   {d:6.2f} s  {n / d / 1e6:6.3f} M events/s")
print(f"sink.rasp.report:         {s:6.2f} s  {n / s / 1e6:6.3f} M events/s")
print(f"sink overhead over decoding: {100 * (s - d) / d:+.1f}% (target < 20%)")
PY

if command -v valgrind >/dev/null; then
  SMALL=$OUT/trace-$CG_EVENTS
  [ -f "$SMALL/.complete" ] || { record "$SMALL" "$CG_EVENTS"; touch "$SMALL/.complete"; }
  ir() {
    local f=$OUT/callgrind.$1.out; shift
    valgrind --tool=callgrind --callgrind-out-file="$f" "$@" >/dev/null 2>&1
    sed -n 's/^summary: //p' "$f"
  }
  ir_dummy=$(ir dummy babeltrace2 "$SMALL" -o dummy)
  ir_sink=$(ir sink babeltrace2 --plugin-path="$PLUGIN_DIR" "$SMALL" -c sink.rasp.report \
    -p 'output="/dev/null"')
  python3 - "$CG_EVENTS" "$ir_dummy" "$ir_sink" <<'PY'
import sys
n, d, s = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(f"callgrind, {n} events: -o dummy {d} Ir, sink {s} Ir")
print(f"sink cost: {(s - d) / n:.0f} instructions per event ({d / n:.0f} per event to decode)")
PY
fi
