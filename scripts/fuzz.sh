#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in build-fuzz/, and runs
# each on its committed corpus (tests/fuzz/corpus/<target>/) for a bounded time. New inputs go
# to a scratch corpus in the build tree, never into the repository. A crash, a leak, a
# sanitizer report or a timeout fails the run and leaves the input in build-fuzz/.
#   scripts/fuzz.sh [SECONDS]   (per target, default 45)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-45}
build="$root/build-fuzz"
"$root/scripts/deps.sh" --fuzz
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -DRASP_FUZZ=ON -DRASP_SANITIZE=address \
  -DRASP_BUILD_TESTS=OFF >/dev/null
targets=(fuzz-cli-args fuzz-report-events fuzz-ctf-index fuzz-nettrace fuzz-diag-protocol
  fuzz-heap-ops)
targets+=(fuzz-diag-client fuzz-read-json fuzz-nettrace-report fuzz-nettrace-ctf fuzz-clr-names)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null
# The real .NET traces of ../shared seed the NetTrace fuzzers too (the reader's and the graph
# ones), where they are (a clone of the repository alone has the committed seeds only); inputs
# are cut at 64 KiB.
shared="$root/../shared/data/dotnet"
nt_seeds="$build/seeds/fuzz-nettrace"
rm -rf "$nt_seeds"
mkdir -p "$nt_seeds"
if ls "$shared"/*.nettrace.zip >/dev/null 2>&1; then
  for z in "$shared"/*.nettrace.zip; do
    python3 -m zipfile -e "$z" "$nt_seeds"
  done
  echo "fuzz-nettrace seeds: the committed corpus and $(ls "$nt_seeds" | wc -l) .NET file(s) from ../shared"
else
  echo "fuzz-nettrace seeds: the committed corpus only (no ../shared/data/dotnet beside this checkout)"
fi
status=0
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3
         -print_final_stats=1)
  dirs=("$work" "$root/tests/fuzz/corpus/$t")
  case "$t" in
    fuzz-nettrace | fuzz-nettrace-report | fuzz-nettrace-ctf)
      flags+=(-max_len=65536)
      dirs+=("$nt_seeds")
      ;;
  esac
  echo "== $t: ${seconds}s on tests/fuzz/corpus/$t"
  # -close_fd_mask=3: the targets' messages on bad input are expected, not news.
  if ! (cd "$build" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$build/bin/$t" "${flags[@]}" "${dirs[@]}" \
      2>"$build/$t.log"); then
    tail -40 "$build/$t.log"
    echo "fuzz.sh: $t FAILED (log: $build/$t.log; the input is in $build)"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$t.log" | tr '\n' ' '
    echo
  fi
done
exit $status
