#!/usr/bin/env bash
# Reader throughput on the same events in both formats (docs/performance.md): an LTTng
# recording of ~2 million AllocationSampled events (rasp record of the EventPipe test program),
# converted to .nettrace with rasp convert, then read by babeltrace2 into sink.utils.dummy
# through source.ctf.fs and through source.rasp.nettrace, and by rasp report. Median of 5
# runs each, alternated; prints events per second and the ratios. Needs a session daemon.
#   bench/consumer/nettrace.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
build=$(cd "${1:?usage: nettrace.sh BUILD_DIR [WORK_DIR]}" && pwd)
work=${2:-$build/bench-nettrace}
rasp=$build/bin/rasp
plugins=$build/lib/babeltrace2
rm -rf "$work"
mkdir -p "$work"
"$rasp" record -o "$work/ctf" --mean 8 --subbuf-size 8M --num-subbuf 16 -- \
  "$build/bin/rasp-ep-prog" 2 1000000 small > "$work/record.out"
"$rasp" convert -o "$work/events.nettrace" "$work/ctf" 2> "$work/convert.out"
events=$(sed -n 's/^rasp convert: wrote \([0-9]*\) events.*/\1/p' "$work/convert.out")
echo "events: $events; CTF $(du -sh "$work/ctf" | cut -f1), .nettrace $(du -sh "$work/events.nettrace" | cut -f1)"

secs() { # command... -> wall seconds
  local s e
  s=$(date +%s%N)
  "$@" > /dev/null 2>&1
  e=$(date +%s%N)
  echo "scale=3; ($e - $s) / 1000000000" | bc
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
declare -A t
for _ in 1 2 3 4 5; do
  t[ctf]+=" $(secs babeltrace2 "$work/ctf" -c sink.utils.dummy)"
  t[nettrace]+=" $(secs babeltrace2 --plugin-path="$plugins" -c source.rasp.nettrace \
                   -p "inputs=[\"$work/events.nettrace\"]" -c sink.utils.dummy)"
  t[report_ctf]+=" $(secs "$rasp" report "$work/ctf")"
  t[report_nettrace]+=" $(secs "$rasp" report "$work/events.nettrace")"
done
for k in ctf nettrace report_ctf report_nettrace; do
  m=$(echo "${t[$k]}" | median)
  printf "%-16s %6.3f s  %8.0f events/s\n" "$k" "$m" "$(echo "$events / $m" | bc -l)"
done
printf "nettrace/ctf time: source %.3f, rasp report %.3f\n" \
  "$(echo "$(echo "${t[nettrace]}" | median) / $(echo "${t[ctf]}" | median)" | bc -l)" \
  "$(echo "$(echo "${t[report_nettrace]}" | median) / $(echo "${t[report_ctf]}" | median)" | bc -l)"
