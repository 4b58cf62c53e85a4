#!/usr/bin/env bash
# CTest dotnet-eventpipe-oracle: runs the Oracle under a .NET 10 EventPipe file session that
# records only AllocationSampled (Microsoft-Windows-DotNETRuntime keyword 0x80000000000, level
# 4), dumps the resulting .nettrace with TraceEvent (NetTraceDump) and checks the events
# against the Oracle's truth (check-oracle.py). Prints every command and every check.
#   run-oracle.sh DOTNET PYTHON3 OUT WORK [--threads N] [--scale K] [--rasp RASP]
# With --rasp, rasp report reads the same file and its intervals must hold the truth.
# OUT is where build.sh put the programs; WORK (emptied first) receives the trace, the truth
# and the dumps. With --rasp, also where: rasp report by site and by stack against TraceEvent's
# TraceLog (the innermost frame of each sample) and against the Oracle's code (check_sites).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: run-oracle.sh DOTNET PYTHON3 OUT WORK [--threads N] [--scale K]" >&2; exit 2; }
dotnet=$1 python=$2 out=$3 work=$4
shift 4
threads=4 scale=1 rasp=
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --rasp) rasp=$2; shift 2 ;;
    *) echo "run-oracle.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1

rm -rf "$work"
mkdir -p "$work"
cd "$work"

echo "+ DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath=$work/oracle-{pid}.nettrace" \
     "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4" \
     "$dotnet $out/Oracle/Oracle.dll --threads $threads --scale $scale --truth $work/truth.json"
start=$(date +%s%N)
DOTNET_EnableEventPipe=1 \
DOTNET_EventPipeOutputPath="$work/oracle-{pid}.nettrace" \
DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x80000000000:4' \
  "$dotnet" "$out/Oracle/Oracle.dll" --threads "$threads" --scale "$scale" --truth "$work/truth.json" \
  || { echo "FAIL: the Oracle exited with status $?"; exit 1; }
echo "Oracle ran in $(( ($(date +%s%N) - start) / 1000000 )) ms"

shopt -s nullglob
traces=("$work"/oracle-*.nettrace)
[ ${#traces[@]} -eq 1 ] || { echo "FAIL: want one oracle-<pid>.nettrace in $work, found ${#traces[@]}"; exit 1; }
trace=${traces[0]}
pid=${trace##*/oracle-}
pid=${pid%.nettrace}
echo "trace: $trace ($(stat -c %s "$trace") bytes), pid $pid"

echo "+ $dotnet $out/NetTraceDump/NetTraceDump.dll $trace > $work/events.tsv"
"$dotnet" "$out/NetTraceDump/NetTraceDump.dll" "$trace" > "$work/events.tsv" \
  || { echo "FAIL: NetTraceDump could not read $trace"; exit 1; }
echo "+ $dotnet $out/NetTraceDump/NetTraceDump.dll --summary $trace"
"$dotnet" "$out/NetTraceDump/NetTraceDump.dll" --summary "$trace" | tee "$work/summary.tsv" \
  || { echo "FAIL: NetTraceDump --summary could not read $trace"; exit 1; }

report=()
if [ -n "$rasp" ]; then
  # 99.99%: about 3.9 standard errors, the tolerance of the model checks.
  # --raw-names: the runtime's names, as TraceEvent and the Oracle's truth give them.
  echo "+ $rasp report --format json --raw-names --group-by type,kind --confidence 0.9999 $trace > $work/report.json"
  "$rasp" report --format json --raw-names --group-by type,kind --confidence 0.9999 "$trace" > "$work/report.json" \
    || { echo "FAIL: rasp report could not read $trace"; exit 1; }
  "$rasp" report "$trace"
  report=(--report "$work/report.json")
  # Where: .NET's stacks in the file, its managed frames named from the rundown at the
  # session's end. TraceEvent's TraceLog names them too (the innermost frame per sample: rasp's
  # --site leaf, in the runtime's names).
  for by in site stack; do
    echo "+ $rasp report --format json --raw-names --site leaf --group-by type,$by --confidence 0.9999 $trace > $work/report-$by.json"
    "$rasp" report --format json --raw-names --site leaf --group-by "type,$by" --confidence 0.9999 "$trace" > "$work/report-$by.json" \
      || { echo "FAIL: rasp report --group-by type,$by could not read $trace"; exit 1; }
  done
  "$rasp" report --by site --top 8 "$trace"
  echo "+ $dotnet $out/NetTraceDump/NetTraceDump.dll --sites $trace $work/trace.etlx > $work/sites.tsv"
  "$dotnet" "$out/NetTraceDump/NetTraceDump.dll" --sites "$trace" "$work/trace.etlx" > "$work/sites.tsv" \
    || { echo "FAIL: NetTraceDump --sites could not read $trace"; exit 1; }
  report+=(--sites "$work/sites.tsv" --site-report "$work/report-site.json"
           --stack-report "$work/report-stack.json")
fi

echo "+ $python $here/check-oracle.py --trace $trace --truth $work/truth.json --events $work/events.tsv --pid $pid --threads $threads ${report[*]}"
exec "$python" "$here/check-oracle.py" --trace "$trace" --truth "$work/truth.json" \
     --events "$work/events.tsv" --pid "$pid" --threads "$threads" "${report[@]}"
