#!/bin/bash
# The same real programs under glibc, rasp record (librasp-malloc preloaded, stacks on, mean
# 128 KiB), jemalloc's heap profiling (Debian libjemalloc2, MALLOC_CONF=prof:true,
# lg_prof_sample:17: a mean of 128 KiB too) and heaptrack (Debian), and, for what the
# allocators alone cost, librasp-malloc and jemalloc preloaded without profiling: wall time,
# peak RSS (of the program: GNU time's maximum resident set) and what each leaves on disk.
# Medians of RUNS runs (default 3), the configurations interleaved within each run so that a
# shared machine's load drifts over all of them alike; then each profiler's wall time over
# glibc's and its overhead (the ratio minus 1) against jemalloc prof's and heaptrack's.
# SCALE=N (default 1; a fraction such as 0.2 too) makes every program but git's N times as long
# (git log -p already reads this repository's whole history), which tells a profiler's fixed
# cost per run from its cost per second. INSTR=1 counts instructions instead, one run of each
# under callgrind (--trace-children: the program, rasp record and its helpers; not the LTTng
# daemons, which run apart), stable where wall time is not; about 50 times slower, hence with
# SCALE=0.2. Not heaptrack: under valgrind its preloaded library records nothing (0
# allocations), so its count would be the program's alone. PAIRS=N times rasp record against
# jemalloc prof only, in N pairs (median of the pairs' ratios); ONLY=perl,git-log picks programs
# (python3, perl, sqlite3, git-log, threads). Usage: [SCALE=N] [INSTR=1] [PAIRS=N] [ONLY=...]
# bench/malloc/peers.sh BUILD-DIR [RUNS] (docs/performance.md, "librasp-malloc").
set -uo pipefail
export PYTHONMALLOC=malloc # python3 on the malloc measured; the others ignore it
build=${1:?usage: peers.sh BUILD-DIR [RUNS]}
runs=${2:-3}
scale=${SCALE:-1}
rasp="$build/bin/rasp"
jemalloc=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
# A missing peer would be measured as glibc under its name: refuse instead.
if [ -z "$jemalloc" ] || ! command -v heaptrack >/dev/null || [ ! -x "$rasp" ]; then
	echo "peers.sh: needs libjemalloc2, heaptrack and $rasp: run scripts/deps.sh --bench and build" >&2
	exit 2
fi
if ! [[ ${PAIRS:-0} =~ ^[0-9]+$ ]] || { [ "${PAIRS:-0}" -gt 0 ] && [ "${INSTR:-0}" = 1 ]; }; then
	echo "peers.sh: PAIRS is a number of pairs of wall times, not with INSTR=1" >&2
	exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Debian's own interpreter, not a wrapper script found first on PATH (pyenv's shims are
# shell scripts: heaptrack and the preload would measure the shell).
py=/usr/bin/python3
[ -x "$py" ] || py=$(python3 -c 'import sys; print(sys.executable)')
cat >"$work/work.py" <<PY
import json, random
random.seed(1)
d = {str(i): [random.random() for _ in range(5)] for i in range(int(300000 * $scale))}
s = json.dumps(d)
print(len(s), len(json.loads(s)))
PY
sqlite_sql="create table t(a integer, b text);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 300000 * $scale)
insert into t select i, printf('%.*c', i % 200, 'x') from n;
create index ti on t(b); select count(*) from t group by a % 7 limit 1;"
cat >"$work/threads.cc" <<CC
#include <map>
#include <string>
#include <thread>
#include <vector>
int main() {
	std::vector<std::thread> ts;
	for (int t = 0; t < 4; t++)
		ts.emplace_back([t] {
			for (int r = 0; r < 20 * $scale; r++) {
				std::map<int, std::string> m;
				for (int i = 0; i < 50000; i++) m[i * 7 + t] = std::string(i % 100, 'x');
			}
		});
	for (auto &t : ts) t.join();
}
CC
g++ -O2 -pthread -o "$work/threads" "$work/threads.cc"
programs=(
	"python3|$py $work/work.py"
	"perl|perl -e my%h;for(1..500000*$scale){\$h{\$_}=\"x\"x(\$_%300)}print(scalar(keys%h))"
	"sqlite3|sqlite3 :memory: $sqlite_sql"
	"git-log|git -C $(cd "$(dirname "$0")/../.." && pwd) log -p -n 2000"
	"threads|$work/threads"
)
measure() { # label dir cmd...: appends "secs kib disk rc" to $work/res.label
	local label=$1 dir=$2
	shift 2
	/usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err"
	local rc=$?
	read -r secs kib < <(tail -n 1 "$work/time") # after "Command exited with ..." if it failed
	local size
	size=$(du -sk "$dir" 2>/dev/null | cut -f1)
	echo "$secs $kib ${size:-0} $rc" >>"$work/res.$label"
}
median() { # column of $work/res.label
	sort -n -k"$2" "$work/res.$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
# With INSTR=1, measure counts the instructions of every process under callgrind instead (each
# one's "totals:" line), and the wall, RSS and disk columns describe the run under valgrind.
if [ "${INSTR:-0}" = 1 ]; then
	measure() {
		local label=$1 dir=$2
		shift 2
		rm -rf "$work/cg" && mkdir -p "$work/cg"
		valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg/%p" \
			"$@" >/dev/null 2>"$work/err"
		local rc=$?
		cat "$work"/cg/* | awk '/^totals:/ { s += $2 } END { printf "%.0f\n", s }' >"$work/ir.$label"
		echo "0 0 0 $rc" >>"$work/res.$label"
	}
	runs=1
fi
labels=(glibc rasp-malloc rasp jemalloc jemalloc-prof heaptrack)
measure_rasp() {
	rm -rf "$work/rasp"
	measure rasp "$work/rasp" "$rasp" record --mean 131072 -o "$work/rasp" -- "$@"
}
measure_jemalloc_prof() {
	rm -rf "$work/je" && mkdir -p "$work/je"
	measure jemalloc-prof "$work/je" env LD_PRELOAD="$jemalloc" \
		MALLOC_CONF="prof:true,lg_prof_sample:17,prof_final:true,prof_prefix:$work/je/jeprof" "$@"
}
for p in "${programs[@]}"; do
	name=${p%%|*} cmd=${p#*|}
	[ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$name,"* ]] || continue
	if [ "$name" = sqlite3 ]; then set -- sqlite3 :memory: "$sqlite_sql"; else read -r -a a <<<"$cmd"; set -- "${a[@]}"; fi
	rm -f "$work"/res.*
	mkdir -p "$work/none"
	# PAIRS=N: rasp record against jemalloc prof alone, N pairs, which goes first alternating;
	# the ratio of each pair's wall times, so that the machine's drift cancels within a pair.
	if [ "${PAIRS:-0}" -gt 0 ]; then
		for ((r = 0; r < PAIRS; r++)); do
			if ((r % 2)); then
				measure_jemalloc_prof "$@"
				measure_rasp "$@"
			else
				measure_rasp "$@"
				measure_jemalloc_prof "$@"
			fi
		done
		paste -d' ' "$work/res.rasp" "$work/res.jemalloc-prof" |
			awk '$4 != 0 || $8 != 0 { bad = 1 } { print $1 / ($5 > 0 ? $5 : 0.01), bad + 0 }' |
			sort -n | awk -v n="$name" '{ v[NR] = $1; bad += $2 } END {
			printf "%s: rasp record / jemalloc prof, wall, %d pairs: median %.2f (%.2f-%.2f)%s\n",
				n, NR, v[int((NR + 1) / 2)], v[1], v[NR], bad ? " (a run failed)" : "" }'
		continue
	fi
	for ((r = 0; r < runs; r++)); do
		measure glibc "$work/none" "$@"
		measure rasp-malloc "$work/none" env LD_PRELOAD="$build/lib/librasp-malloc.so" "$@"
		measure_rasp "$@"
		measure jemalloc "$work/none" env LD_PRELOAD="$jemalloc" "$@"
		measure_jemalloc_prof "$@"
		rm -rf "$work/ht" && mkdir -p "$work/ht"
		[ "${INSTR:-0}" = 1 ] || measure heaptrack "$work/ht" heaptrack -o "$work/ht/ht" "$@"
	done
	if [ "${INSTR:-0}" = 1 ]; then
		g=$(cat "$work/ir.glibc")
		echo "$name (instructions, callgrind, SCALE=$scale)"
		for l in "${labels[@]}"; do
			[ "$l" = heaptrack ] && continue
			printf '  %-13s %15s instructions  %.2fx glibc%s\n' "$l" "$(cat "$work/ir.$l")" \
				"$(echo "$(cat "$work/ir.$l") / $g" | bc -l)" \
				"$(awk '$4 != 0 { bad = 1 } END { if (bad) print " (the run failed)" }' "$work/res.$l")"
		done
		continue
	fi
	echo "$name (medians of $runs)"
	for l in "${labels[@]}"; do
		printf '  %-13s %7.2f s %8d KiB RSS %8s KiB on disk%s\n' "$l" "$(median "$l" 1)" \
			"$(median "$l" 2)" "$(median "$l" 3)" \
			"$(awk '$4 != 0 { bad = 1 } END { if (bad) print " (a run failed)" }' "$work/res.$l")"
	done
	awk -v g="$(median glibc 1)" -v r="$(median rasp 1)" -v j="$(median jemalloc-prof 1)" \
		-v h="$(median heaptrack 1)" 'BEGIN {
		printf "  over glibc: rasp record %.2fx, jemalloc prof %.2fx, heaptrack %.2fx;", r / g, j / g, h / g
		printf " rasp'"'"'s overhead %+.2f s against jemalloc prof'"'"'s %+.2f s and heaptrack'"'"'s %+.2f s (%.2f of it)\n",
			r - g, j - g, h - g, ((h - g) > 0 ? (r - g) / (h - g) : 0) }'
done
