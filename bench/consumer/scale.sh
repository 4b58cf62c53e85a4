#!/usr/bin/env bash
# docs/performance.md, "The consumer at scale": builds bench/consumer/scale.c against
# a build tree's report library and runs it.
#   bench/consumer/scale.sh [BUILD_DIR] [TYPES] [THREADS] [PROCS]   (build 1000000 8 300000)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
shift || true
cc -O2 -g -std=c11 -D_POSIX_C_SOURCE=200809L -I"$src/consumer" -I"$src/include" \
  -I"$build/generated" "$src/bench/consumer/scale.c" \
  "$build/consumer/librasp-report.a" "$build/consumer/librasp-estimate.a" \
  "$build/codec/librasp-codec.a" $(pkg-config --libs libdw libprotobuf-c zlib) -lm \
  -o "$build/rasp-bench-scale"
"$build/rasp-bench-scale" "$@"
