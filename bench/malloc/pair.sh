#!/bin/bash
# Instructions per malloc+free pair (and per allocation, per free of n live blocks) under
# glibc, librasp-malloc (sampling on, no session) and mimalloc (Debian libmimalloc2.0), with
# callgrind: bench/malloc/pair.sh BUILD-DIR [N] [SIZE]. Prints one line per allocator;
# BASE_BUILD=DIR adds the librasp-malloc of another build ("base"), to compare two versions.
set -euo pipefail
build=${1:?usage: pair.sh BUILD-DIR [N] [SIZE]}
n=${2:-1000000}
size=${3:-32}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -fno-builtin -o "$work/pair" "$here/pair.c"
mimalloc=$(ls /usr/lib/*/libmimalloc.so.2* 2>/dev/null | head -1 || true)
run() { # name preload
	local name=$1 pre=$2 out="$work/cg.$1"
	env ${pre:+LD_PRELOAD=$pre} RASP_SAMPLING=on RASP_SEED=1 LTTNG_UST_REGISTER_TIMEOUT=0 \
		valgrind --tool=callgrind --callgrind-out-file="$out" \
		--toggle-collect=main "$work/pair" "$n" "$size" >/dev/null 2>&1
	# Instructions inside main (the pairs, then the allocations and their frees): 2n of each.
	local ir
	ir=$(awk '/^summary:/{print $2}' "$out")
	printf '%-16s %7.1f instructions per malloc + free (%s in main, n = %s, %s bytes)\n' \
		"$name" "$(echo "$ir / (2 * $n)" | bc -l)" "$ir" "$n" "$size"
}
run glibc ""
run librasp-malloc "$build/lib/librasp-malloc.so"
[ -n "${BASE_BUILD:-}" ] && run base "$BASE_BUILD/lib/librasp-malloc.so"
[ -n "$mimalloc" ] && run mimalloc "$mimalloc"
