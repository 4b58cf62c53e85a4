#!/usr/bin/env bash
# The main job: installs dependencies, builds, records the demo workload (a multi-threaded
# document store on the rasp runtime) with `rasp record`, reports it with `rasp report`, and
# prints the estimates beside the workload's own count of what it allocated; then what the
# workload still holds at exit (rasp report --inuse) beside its own count of that.
#   scripts/demo.sh [--docs N] [--threads N] [--mean BYTES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
docs=20000 threads=4 mean=102400
while [ $# -gt 0 ]; do
  case "$1" in
    --docs|--threads|--mean)
      [ $# -ge 2 ] || { echo "demo.sh: $1 needs a value" >&2; exit 2; }
      declare "${1#--}=$2"; shift 2 ;;
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

"$root/scripts/deps.sh"
cmake -S "$root" -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

out="$build/demo"
rm -rf "$out" && mkdir -p "$out"
rasp="$build/bin/rasp"

echo "== rasp record -- rasp-docstore ($threads threads x $docs documents, sampling mean $mean bytes)"
"$rasp" record -o "$out/trace" --mean "$mean" -- \
  "$build/bin/rasp-docstore" --threads "$threads" --docs "$docs" --truth "$out/truth.json" --no-cleanup
echo
echo "== rasp report $out/trace"
"$rasp" report "$out/trace"
"$rasp" report --format json -o "$out/report.json" "$out/trace"
echo
echo "== estimates beside the truth (the workload counted its own allocations)"
python3 "$root/examples/compare-truth.py" "$out/report.json" "$out/truth.json"
echo
echo "== rasp report --inuse $out/trace: what rasp-docstore still holds at exit"
"$rasp" report --inuse "$out/trace"
"$rasp" report --inuse --format json -o "$out/inuse.json" "$out/trace"
echo
echo "== in use at exit beside the truth (the workload walked its heap before exiting)"
python3 "$root/examples/compare-truth.py" --inuse "$out/inuse.json" "$out/truth.json"
