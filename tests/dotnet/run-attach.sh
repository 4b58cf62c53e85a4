#!/usr/bin/env bash
# CTest dotnet-attach: the diagnostic IPC protocol both ways, with real tools and programs.
#  1. dotnet-trace 10 (the pinned local tool) lists a rasp program (diag-prog with
#     RASP_DIAGNOSTICS=1) in `ps` and collects from it with
#     --providers Microsoft-Windows-DotNETRuntime:0x80000000000:4; TraceEvent (NetTraceDump)
#     reads the file with nothing lost, and rasp report's 99.99% intervals hold the truth the
#     program printed (its allocations made while the session ran).
#  2. rasp record -p on a running .NET 10 Oracle: started, then the Oracle allocates its known
#     truth, then Ctrl-C (SIGINT) ends the session; check-oracle.py holds TraceEvent's reading
#     and rasp's intervals against the truth; the Oracle runs on after the session and exits 0.
# Prints every command and every check; "FAIL: ..." fails the test.
#   run-attach.sh DOTNET PYTHON3 OUT RASP DIAG-PROG WORK
set -euo pipefail
[ $# -eq 6 ] || { echo "usage: run-attach.sh DOTNET PYTHON3 OUT RASP DIAG-PROG WORK" >&2; exit 2; }
dotnet=$1 python=$2 out=$3 rasp=$4 prog=$5 work=$6
here=$(cd "$(dirname "$0")" && pwd)
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
rm -rf "$work"
mkdir -p "$work"
# Every socket in a private directory: the tools look where TMPDIR says.
export TMPDIR="$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
run() { echo "+ $*" >&2; "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
wait_for() { # FILE SECONDS WHAT
  for _ in $(seq $(( $2 * 20 ))); do [ -s "$1" ] && return 0; sleep 0.05; done
  fail "$3: $1 did not appear within $2 s"
}

# ---- 1. dotnet-trace attaches to a rasp program ----------------------------------------------
# It allocates once a session wants its samples, until SIGTERM, and prints that truth.
echo "+ RASP_DIAGNOSTICS=1 $prog 2 600 session > $work/prog.out &"
RASP_LTTNG=0 RASP_DIAGNOSTICS=1 "$prog" 2 600 session > "$work/prog.out" &
ppid=$!
pids+=("$ppid")
wait_for "$work/prog.out" 10 "diag-prog"
ls "$work"/dotnet-diagnostic-"$ppid"-*-socket >/dev/null 2>&1 || fail "diag-prog $ppid has no socket in $work"
(cd "$here" && run "$dotnet" tool run dotnet-trace -- ps) > "$work/ps.txt"
cat "$work/ps.txt"
grep -Eq "^ *$ppid +rasp-diag-prog" "$work/ps.txt" || fail "dotnet-trace ps does not list diag-prog ($ppid)"
echo "ok:   dotnet-trace ps lists diag-prog ($ppid)"

# dotnet-trace stops at the end of its standard input: give it one that stays open.
(cd "$here" && sleep 60 | run "$dotnet" tool run dotnet-trace -- collect -p "$ppid" \
   --providers Microsoft-Windows-DotNETRuntime:0x80000000000:4 --duration 00:00:00:20 \
   -o "$work/dt.nettrace") > "$work/collect.txt" 2>&1 &
cpid=$!
pids+=("$cpid")
for _ in $(seq 600); do grep -q '^allocating' "$work/prog.out" && break; sleep 0.05; done
grep -q '^allocating' "$work/prog.out" || fail "dotnet-trace's session did not start sampling in 30 s"
sleep 3
# The program exits while the session runs: its stream ends cleanly, dotnet-trace with it.
kill -TERM "$ppid"
wait "$ppid" || fail "diag-prog exited with status $?"
for _ in $(seq 300); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$cpid" 2>/dev/null && { kill -INT "$cpid"; sleep 2; }
wait "$cpid" || { cat "$work/collect.txt"; fail "dotnet-trace collect exited with status $?"; }
cat "$work/collect.txt" "$work/prog.out"
run "$dotnet" "$out/NetTraceDump/NetTraceDump.dll" --summary "$work/dt.nettrace" | tee "$work/dt-summary.tsv" \
  || fail "TraceEvent cannot read what dotnet-trace collected from diag-prog"
grep -Eq '^events=[1-9][0-9]* lost=0 ' "$work/dt-summary.tsv" || fail "TraceEvent: no events, or events lost"
echo "ok:   TraceEvent reads dotnet-trace's file of diag-prog: $(tail -1 "$work/dt-summary.tsv")"
run "$rasp" report --format json --confidence 0.9999 "$work/dt.nettrace" > "$work/dt-report.json" \
  || fail "rasp report cannot read $work/dt.nettrace"
"$rasp" report "$work/dt.nettrace"
"$python" - "$work/prog.out" "$work/dt-report.json" <<'EOF' || exit 1
import json, sys
truth = {}
for line in open(sys.argv[1]):
    if line.startswith("truth "):
        _, name, objects, nbytes = line.split()
        truth[name] = (int(objects), int(nbytes))
report = json.load(open(sys.argv[2]))
rows = {r["type"]: r for r in report["rows"]} if "rows" in report else {}
bad = 0
if len(truth) != 3:
    print(f"FAIL: diag-prog printed {len(truth)} truths, not 3"); sys.exit(1)
for name, (objects, nbytes) in truth.items():
    r = rows.get(name)
    if r is None:
        print(f"FAIL: rasp report has no row for {name}"); bad += 1; continue
    lo, hi = r["bytes_low"], r["bytes_high"]
    ok = lo <= nbytes <= hi
    print(("ok:   " if ok else "FAIL: ") + f"{name}: true bytes {nbytes} in [{lo}, {hi}]")
    bad += not ok
sys.exit(1 if bad else 0)
EOF

# ---- 2. rasp record -p on a running .NET 10 program ------------------------------------------
# 4 threads at scale 2: 40,000 Int32[] of lengths 0-4096. Their object interval rests on the
# few samples of the smallest arrays (weights of ~4,000 each) and under-covers with fewer
# objects (seen: 10,000 outside [10,458, 13,711] at 99.99% with 2 threads at scale 1).
echo "+ $dotnet $out/Oracle/Oracle.dll --threads 4 --scale 2 --truth $work/truth.json --go $work/go2 --linger $work/linger > $work/oracle.out &"
"$dotnet" "$out/Oracle/Oracle.dll" --threads 4 --scale 2 --truth "$work/truth.json" --go "$work/go2" \
  --linger "$work/linger" > "$work/oracle.out" &
opid=$!
pids+=("$opid")
wait_for "$work/oracle.out" 30 "the Oracle"
echo "+ $rasp record -p $opid -o $work/oracle.nettrace > $work/record.out &"
"$rasp" record -p "$opid" -o "$work/oracle.nettrace" > "$work/record.out" 2> "$work/record.err" &
rpid=$!
pids+=("$rpid")
wait_for "$work/oracle.nettrace" 30 "rasp record -p"
sleep 0.5
touch "$work/go2"
wait_for "$work/truth.json" 120 "the Oracle's truth"
sleep 0.5
kill -INT "$rpid"
wait "$rpid" || { cat "$work/record.err"; fail "rasp record -p exited with status $?"; }
cat "$work/record.err" "$work/record.out"
grep -q "recording process $opid" "$work/record.err" || fail "rasp record -p did not say what it records"
kill -0 "$opid" 2>/dev/null || fail "the Oracle did not survive the session"
echo "ok:   the Oracle runs on after the session"
touch "$work/linger"
wait "$opid" || fail "the Oracle exited with status $? after the session"
echo "ok:   the Oracle exited 0"
run "$dotnet" "$out/NetTraceDump/NetTraceDump.dll" "$work/oracle.nettrace" > "$work/events.tsv" \
  || fail "TraceEvent cannot read rasp record -p's file"
run "$rasp" report --format json --raw-names --group-by type,kind --confidence 0.9999 "$work/oracle.nettrace" \
  > "$work/report.json" || fail "rasp report cannot read $work/oracle.nettrace"
run "$python" "$here/check-oracle.py" --trace "$work/oracle.nettrace" --truth "$work/truth.json" \
  --events "$work/events.tsv" --pid "$opid" --threads 4 --report "$work/report.json"
echo "PASS: dotnet-attach"
