#!/usr/bin/env bash
# CTest dotnet-reads-rasp-files: TraceEvent 4.0.0 (NetTraceDump) reads every kind of file rasp
# writes, and sees in each exactly what rasp's own reader (nt-dump) sees, field by field:
#   runtime.nettrace   a rasp program's own EventPipe session (DOTNET_EnableEventPipe=1)
#   lttng.nettrace     an LTTng recording (rasp record) through rasp convert
#   again.nettrace     runtime.nettrace through rasp convert (nettrace to nettrace)
#   dropped.nettrace   a session whose buffers overflowed: both readers count the same losses
# and dotnet-trace 10 converts each without an error; and TraceEvent reads rasp's own events
# (Rasp-Runtime: the sampling announcements, the frees of sampled objects, the heap's
# destruction) as dynamic events from each file's metadata, with the fields rasp's reader
# decodes; ep-prog frees every object, so each file holds one free per sample.
# Prints every command and check.
#   check-rasp-files.sh DOTNET OUT RASP EP_PROG NT_DUMP WORK
set -euo pipefail
[ $# -eq 6 ] || { echo "usage: check-rasp-files.sh DOTNET OUT RASP EP_PROG NT_DUMP WORK" >&2; exit 2; }
dotnet=$1 out=$2 rasp=$3 ep_prog=$4 nt_dump=$5 work=$6
here=$(cd "$(dirname "$0")" && pwd)
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1
unset DOTNET_EnableEventPipe COMPlus_EnableEventPipe RASP_SAMPLING RASP_SAMPLING_MEAN
rm -rf "$work"
mkdir -p "$work"
cd "$work"
run() { echo "+ $*" >&2; "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

ep=(env DOTNET_EnableEventPipe=1
    DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4)
run "${ep[@]}" DOTNET_EventPipeOutputPath="$work/runtime.nettrace" RASP_SAMPLING_MEAN=4096 \
    "$ep_prog" 4 3000 > runtime.out || fail "ep-prog exited with $?"
cat runtime.out
run "${ep[@]}" DOTNET_EventPipeOutputPath="$work/dropped.nettrace" DOTNET_EventPipeCircularMB=1 \
    RASP_SAMPLING_MEAN=1 "$ep_prog" 8 50000 small || fail "ep-prog exited with $?"
run "$rasp" record -o "$work/ctf" --mean 4096 -- "$ep_prog" 2 3000 > lttng.out \
  || fail "rasp record failed"
cat lttng.out
run "$rasp" convert -o "$work/lttng.nettrace" "$work/ctf" || fail "rasp convert (CTF) failed"
run "$rasp" convert -o "$work/again.nettrace" "$work/runtime.nettrace" \
  || fail "rasp convert (nettrace) failed"

for f in runtime lttng again dropped; do
  file=$work/$f.nettrace
  echo "+ $dotnet $out/NetTraceDump/NetTraceDump.dll $file > $f.traceevent"
  "$dotnet" "$out/NetTraceDump/NetTraceDump.dll" "$file" > "$f.traceevent" \
    || fail "TraceEvent cannot read $file"
  run "$nt_dump" "$file" > "$f.rasp" || fail "rasp's reader cannot read $file"
  te_tail=$(tail -n 1 "$f.traceevent") rasp_tail=$(tail -n 1 "$f.rasp")
  echo "$f: TraceEvent: $te_tail; rasp: $rasp_tail"
  [ "$te_tail" = "$rasp_tail" ] || fail "$f: the readers disagree on the totals"
  case "$te_tail" in events=0\ *) fail "$f: no AllocationSampled event" ;; esac
  # TraceEvent dispatches events of equal timestamps in its own order: compare sorted.
  if ! diff <(head -n -1 "$f.traceevent" | sort) <(head -n -1 "$f.rasp" | sort) > "$f.diff"; then
    head -20 "$f.diff"
    fail "$f: TraceEvent and rasp decode different events ($(grep -c '^[<>]' "$f.diff") lines differ)"
  fi
  echo "$f: $(($(wc -l < "$f.rasp") - 1)) events identical in both readers"
  # Rasp-Runtime's events, which no TraceEvent parser knows: through its dynamic parser.
  echo "+ $dotnet $out/NetTraceDump/NetTraceDump.dll --rasp $file > $f.rasp-traceevent"
  "$dotnet" "$out/NetTraceDump/NetTraceDump.dll" --rasp "$file" > "$f.rasp-traceevent" \
    || fail "TraceEvent cannot read rasp's events in $file"
  run "$nt_dump" --rasp "$file" > "$f.rasp-rasp" || fail "rasp's reader cannot read $file"
  if ! diff <(sort "$f.rasp-traceevent") <(sort "$f.rasp-rasp") > "$f.rasp-diff"; then
    head -20 "$f.rasp-diff"
    fail "$f: TraceEvent and rasp decode rasp's own events differently"
  fi
  frees=$(grep -c $'\t3\tSampledObjectFreed\tClrInstanceID=[0-9]*\tAddress=[0-9]*\tObjectSize=[0-9]*$' \
    "$f.rasp-traceevent" || true)
  destroyed=$(grep -c $'\t4\tHeapDestroyed\tClrInstanceID=[0-9]*$' "$f.rasp-traceevent" || true)
  samples=$(sed -n 's/^events=\([0-9]*\) .*/\1/p' "$f.rasp")
  echo "$f: TraceEvent reads $frees SampledObjectFreed, $destroyed HeapDestroyed; $samples samples"
  if [ "$f" != dropped ]; then
    [ "$frees" = "$samples" ] || fail "$f: $frees frees of sampled objects for $samples samples"
    [ "$destroyed" = 1 ] || fail "$f: $destroyed HeapDestroyed events, not 1"
  fi
  # dotnet-trace is a local tool of tests/dotnet: run it from there.
  echo "+ (cd $here && $dotnet tool run dotnet-trace -- convert --format speedscope $file -o $work/$f)"
  (cd "$here" && "$dotnet" tool run dotnet-trace -- convert --format speedscope "$file" \
      -o "$work/$f") > "$f.dotnet-trace" 2>&1 || { cat "$f.dotnet-trace"; fail "dotnet-trace cannot convert $file"; }
  grep -q "Conversion complete" "$f.dotnet-trace" || { cat "$f.dotnet-trace"; fail "dotnet-trace did not complete $file"; }
done
grep -q "lost=0 " runtime.rasp || fail "runtime.nettrace lost events"
# Every sample the programs counted is in the files, and converting changes no field.
for f in runtime lttng; do
  want=$(sed -n 's/^samples=\([0-9]*\) .*/\1/p' "$f.out")
  grep -q "^events=$want " "$f.rasp" || fail "$f: the program counted $want samples, the file holds $(tail -n 1 "$f.rasp")"
done
diff <(sort runtime.rasp) <(sort again.rasp) > again.diff \
  || { head -5 again.diff; fail "rasp convert changed events of runtime.nettrace"; }
grep -q "lost=0 " dropped.rasp && fail "dropped.nettrace shows no loss: the test did not overflow the buffers"
echo "PASS: TraceEvent reads runtime, LTTng-converted, re-converted and overflowed files as rasp does, rasp's own events included"
