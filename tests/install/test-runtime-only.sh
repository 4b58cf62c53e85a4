#!/usr/bin/env bash
# The runtime alone: with -DRASP_BUILD_CONSUMER=OFF -DRASP_BUILD_CLI=OFF -DRASP_BUILD_EXAMPLES=OFF
# the project configures and builds where only LTTng-UST (and cmocka, for the tests) is
# installed, and its runtime unit tests build and pass there. Here babeltrace2, liblttng-ctl,
# json-c and libunwind (optional: the stacks of samples then use glibc's backtrace) are hidden
# from pkg-config (a directory holding only lttng-ust's .pc files), so any required lookup of
# them fails the configure. cmocka is found through its CMake package, not pkg-config.
# Usage: test-runtime-only.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work/pc"
for pc in lttng-ust lttng-ust-ctl; do
  f=$(pkg-config --variable=pcfiledir "$pc" 2>/dev/null)/$pc.pc
  [ -f "$f" ] && cp "$f" "$work/pc/"
done
export PKG_CONFIG_LIBDIR="$work/pc" PKG_CONFIG_PATH=
pkg-config --exists babeltrace2 && { echo "FAIL: babeltrace2 still visible"; exit 1; }
cmake -S "$src" -B "$work/build" -DRASP_BUILD_CONSUMER=OFF -DRASP_BUILD_CLI=OFF \
  -DRASP_BUILD_EXAMPLES=OFF >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; echo "FAIL: configure"; exit 1; }
grep -q "Tests: the runtime's and the event layer's unit tests only" "$work/configure.log" ||
  { cat "$work/configure.log"; echo "FAIL: no message saying which tests are skipped"; exit 1; }
cmake --build "$work/build" -j2 >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; echo "FAIL: build"; exit 1; }
[ -e "$work/build/lib/librasp.so" ] && [ -e "$work/build/lib/librasp-lttng.so" ] ||
  { echo "FAIL: librasp or its provider missing"; exit 1; }
[ ! -e "$work/build/bin/rasp" ] || { echo "FAIL: the command was built"; exit 1; }
echo "ok: runtime built without babeltrace2, liblttng-ctl or json-c"

# The runtime's unit tests are there (every tests/runtime test but the two that record and read
# back a trace), and the codec's (tests/codec: libc and cmocka only); the tests that need the
# rest are not, and every registered test passes.
(cd "$work/build" && ctest -N) >"$work/tests.txt"
for t in runtime-api runtime-inline runtime-sample runtime-context runtime-page runtime-segment \
  runtime-variants runtime-soak events-header-c nettrace-write nettrace-payload diag-protocol \
  cursor; do
  grep -qE "Test +#[0-9]+: $t\$" "$work/tests.txt" ||
    { cat "$work/tests.txt"; echo "FAIL: $t is not registered"; exit 1; }
done
for t in runtime-lttng stack provider-layout lttng-sessiond install; do
  ! grep -qE "Test +#[0-9]+: $t\$" "$work/tests.txt" ||
    { cat "$work/tests.txt"; echo "FAIL: $t is registered without its dependencies"; exit 1; }
done
(cd "$work/build" && ctest --output-on-failure) >"$work/ctest.log" 2>&1 ||
  { tail -60 "$work/ctest.log"; echo "FAIL: unit tests"; exit 1; }
echo "PASS: runtime-only build, its $(grep -cE 'Test +#[0-9]+:' "$work/tests.txt") unit tests passed"
