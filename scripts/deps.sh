#!/usr/bin/env bash
# Installs rasp's build and test dependencies from Debian 12 packages (root, apt-get) and makes
# sure an LTTng session daemon is running. Idempotent: apt-get runs only for missing packages.
#   scripts/deps.sh [--bench] [--fuzz] [--format]   (--bench: the benchmarks' tools; --fuzz:
#   clang and libFuzzer for scripts/fuzz.sh; --format: clang-format for scripts/format.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

packages=(
  build-essential cmake pkg-config python3   # toolchain, CMake >= 3.25, the event generator
  lttng-tools liblttng-ust-dev liblttng-ctl-dev   # tracer, session daemon and client
  babeltrace2 libbabeltrace2-dev                  # trace reader and plugin API
  libcmocka-dev                                   # unit-test framework
  libjson-c-dev                                   # rasp diff reads JSON reports
  libdw-dev                                       # elfutils: symbolizing stacks
  libunwind-dev                                   # the runtime's stacks of samples
  libprotobuf-c-dev protobuf-c-compiler           # pprof output (profile.proto)
  golang-go chromium                              # tests: go tool pprof, the HTML report
  python3-scipy                                   # reference values for the estimator tests
  liblua5.4-dev                                   # examples/lua: rasp as stock Lua 5.4's allocator
)

for arg in "$@"; do
  case "$arg" in
    # What bench/ needs: callgrind, the peer allocators and profilers, plots.
    --bench) packages+=(valgrind libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev gnuplot-nox heaptrack) ;;
    # libFuzzer comes with clang's runtime libraries.
    --fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    --format) packages+=(clang-format) ;;
    *) echo "deps.sh: unknown option '$arg' (--bench, --fuzz, --format)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages: ${missing[*]}; run this script as root" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # No recommends: lttng-tools would pull in kernel-module builds we do not use.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

"$here/ensure-sessiond.sh"
