#!/usr/bin/env bash
# The main job: installs dependencies, builds, records a real LTTng trace of a program that
# emits DotNETRuntime:AllocationSampled events, and prints it with babeltrace2.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
"$root/scripts/deps.sh"
cmake -S "$root" -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

session="rasp-demo-$$"
trace="$build/traces/$session"
cleanup() { lttng destroy "$session" >/dev/null 2>&1 || true; }
trap cleanup EXIT

lttng create "$session" --output="$trace" >/dev/null
lttng enable-channel -u -s "$session" --subbuf-size=1M --num-subbuf=8 ch0 >/dev/null
lttng enable-event -u -s "$session" -c ch0 'DotNETRuntime:AllocationSampled' >/dev/null
lttng enable-event -u -s "$session" -c ch0 'Rasp_Runtime:*' >/dev/null
lttng add-context -u -s "$session" -c ch0 -t vpid -t vtid -t procname >/dev/null
lttng start "$session" >/dev/null
LTTNG_UST_REGISTER_TIMEOUT=-1 "$build/bin/rasp-emit" -n 20
lttng stop "$session" >/dev/null
discarded=$(lttng list "$session" | awk '/Discarded events:/ { n += $3 } END { print n + 0 }')
lttng destroy "$session" >/dev/null
trap - EXIT

echo "trace: $trace (discarded events: $discarded)"
[ "$discarded" = 0 ] || echo "warning: the tracer discarded events; enlarge the channel (--subbuf-size/--num-subbuf)" >&2
babeltrace2 "$trace"
