#!/usr/bin/env bash
# `cmake --install` into a staging directory (DESTDIR), then a program built from the
# installed headers, library and pkg-config file alone records its samples under a real
# session with no extra environment (no LD_PRELOAD, no RASP_* variables): the installed
# librasp finds the installed provider beside it. Also checks the plugin is installed where
# babeltrace2 looks by itself and loads from there.
# Usage: test-install.sh BUILD_DIR SOURCE_FILE
set -euo pipefail
build=$1 src=$2
stage="$build/test-install"
rm -rf "$stage" && mkdir -p "$stage"
DESTDIR="$stage/root" cmake --install "$build" >"$stage/install.log"

prefix=$(awk -F= '/^prefix=/ { print $2 }' "$(find "$stage/root" -name rasp.pc)")
libdir="$stage/root$prefix/lib"
[ -d "$libdir" ] || libdir=$(dirname "$(find "$stage/root" -name 'librasp.so.0' | head -1)")
for f in librasp.so librasp-lttng.so; do
  [ -e "$libdir/$f" ] || { echo "FAIL: $f not installed in $libdir"; exit 1; }
done
for h in rasp.h events.h event-meta.h export.h; do
  [ -f "$stage/root$prefix/include/rasp/$h" ] || { echo "FAIL: rasp/$h not installed"; exit 1; }
done
plugin=$(find "$stage/root" -name 'rasp-bt2-plugin.so' | head -1)
bt2dir=$(pkg-config --variable=libdir babeltrace2)/babeltrace2/plugins
[ "$plugin" = "$stage/root$bt2dir/rasp-bt2-plugin.so" ] ||
  { echo "FAIL: plugin at '$plugin', not in babeltrace2's directory $bt2dir"; exit 1; }
babeltrace2 --omit-home-plugin-path --omit-system-plugin-path \
  --plugin-path="$(dirname "$plugin")" help sink.rasp.report >/dev/null ||
  { echo "FAIL: babeltrace2 cannot load the installed plugin"; exit 1; }

# Build against the installed files only, through pkg-config.
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage/root"
cc -std=c11 -Wall -Wextra -Werror -o "$stage/installed-prog" "$src" \
  $(pkg-config --cflags --libs rasp) -Wl,-rpath,"$libdir"
if ldd "$stage/installed-prog" | grep -q lttng; then
  echo "FAIL: the program depends on LTTng at link time"; exit 1
fi

session="rasp-install-$$"
trap 'lttng destroy "$session" >/dev/null 2>&1 || true' EXIT
lttng create "$session" --output="$stage/trace" >/dev/null
lttng enable-event -u -s "$session" 'DotNETRuntime:AllocationSampled' >/dev/null
lttng start "$session" >/dev/null
out=$(env -u LD_PRELOAD -u RASP_LTTNG -u RASP_LTTNG_PROVIDER -u RASP_SAMPLING \
  LTTNG_UST_REGISTER_TIMEOUT=-1 "$stage/installed-prog")
lttng stop "$session" >/dev/null
lttng destroy "$session" >/dev/null
trap - EXIT
echo "$out"
samples=$(echo "$out" | sed -n 's/^samples=\([0-9]*\) .*/\1/p')
recorded=$(babeltrace2 "$stage/trace" | grep -c 'DotNETRuntime:AllocationSampled' || true)
echo "$recorded events recorded"
case "$out" in *"provider=loaded"*) ;; *) echo "FAIL: installed provider not loaded"; exit 1 ;; esac
[ "$samples" -gt 0 ] || { echo "FAIL: no samples (sampling did not start under the session)"; exit 1; }
[ "$recorded" = "$samples" ] || { echo "FAIL: $samples samples emitted, $recorded recorded"; exit 1; }
echo "PASS: installed runtime, provider, headers, pkg-config file and plugin"
