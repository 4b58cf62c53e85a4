#!/usr/bin/env bash
# The runtime alone: with -DRASP_BUILD_CONSUMER=OFF -DRASP_BUILD_CLI=OFF the project configures
# and builds where only LTTng-UST is installed. Here babeltrace2, liblttng-ctl, json-c and
# libunwind (optional: the stacks of samples then use glibc's backtrace) are hidden from
# pkg-config (a directory holding only lttng-ust's .pc files), so any required lookup of them
# fails the configure.
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
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; echo "FAIL: configure"; exit 1; }
cmake --build "$work/build" -j2 >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; echo "FAIL: build"; exit 1; }
[ -e "$work/build/lib/librasp.so" ] && [ -e "$work/build/lib/librasp-lttng.so" ] ||
  { echo "FAIL: librasp or its provider missing"; exit 1; }
[ ! -e "$work/build/bin/rasp" ] || { echo "FAIL: the command was built"; exit 1; }
echo "PASS: runtime built without babeltrace2, liblttng-ctl or json-c"
