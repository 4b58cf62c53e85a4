#!/usr/bin/env bash
# CTest dotnet-reads-runtime-frames: TraceEvent 4.0.0's TraceLog (NetTraceDump --sites) names
# the frames an embedding runtime gives rasp (rasp_heap_set_frames: rasp-lua's Lua functions)
# in a .nettrace of rasp's own EventPipe session, as it names .NET's JIT-compiled methods,
# and rasp report names the same sites.
#   check-runtime-frames.sh DOTNET OUT RASP RASP_LUA SCRIPT WORK
set -euo pipefail
[ $# -eq 6 ] || { echo "usage: check-runtime-frames.sh DOTNET OUT RASP RASP_LUA SCRIPT WORK" >&2; exit 2; }
dotnet=$1 out=$2 rasp=$3 lua=$4 script=$5 work=$6
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1
rm -rf "$work"
mkdir -p "$work"
cd "$work"
run() { echo "+ $*" >&2; "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

run env DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath="$work/lua.nettrace" \
    DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80040000000:5 \
    RASP_SAMPLING_MEAN=16384 RASP_SEED=1 RASP_LTTNG=0 "$lua" "$script" 8 > lua.out ||
    fail "rasp-lua exited with $?"
run "$dotnet" "$out/NetTraceDump/NetTraceDump.dll" --sites lua.nettrace lua.etlx > sites.txt ||
    fail "NetTraceDump --sites exited with $?"
cat sites.txt
run "$rasp" report --by type,site --format csv lua.nettrace > report.csv ||
    fail "rasp report exited with $?"
cat report.csv
# TraceEvent names a method Namespace.Name: an empty namespace, then rasp's frame name.
for site in "bottomUpTree (tables.lua:5)" "records (tables.lua:31)" "fillArray (tables.lua:23)"; do
    grep -qF "	.$site	" sites.txt || fail "TraceEvent does not name the site '$site'"
    grep -qF "$site" report.csv || fail "rasp report does not name the site '$site'"
done
# Every sample with a stack is named (the '?' lines are samples taken before the script ran,
# with no Lua frame); no bare address.
if grep -qP '\t0x[0-9a-f]+\t' sites.txt; then
    fail "TraceEvent left a frame unnamed"
fi
echo "PASS"
