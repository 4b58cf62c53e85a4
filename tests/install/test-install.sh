#!/usr/bin/env bash
# The installed project, under a prefix of its own (cmake --install --prefix P, nothing else):
# everything lands under P and works from there with no extra environment. librasp, its
# provider, headers, rasp.pc and the CMake package (find_package(rasp CONFIG), rasp::rasp)
# build a program that records its samples under a real session; P/bin/rasp reports without
# LD_LIBRARY_PATH and without any plugin path; babeltrace2 loads the plugin from
# P/<libdir>/babeltrace2/plugins when told where; the man page is installed.
# Usage: test-install.sh BUILD_DIR SOURCE_FILE TRACE_DIR
set -euo pipefail
build=$1 src=$2 trace_in=$3
stage="$build/test-install"
P="$stage/prefix"
rm -rf "$stage" && mkdir -p "$stage"
cmake --install "$build" --prefix "$P" >"$stage/install.log"
fail() { echo "FAIL: $*"; exit 1; }

libdir=$(dirname "$(find "$P" -name 'librasp.so.0' | head -1)")
case "$libdir" in "$P"/*) ;; *) fail "librasp not installed under $P" ;; esac
for f in librasp.so librasp-lttng.so librasp-malloc.so librasp-dl.so pkgconfig/rasp.pc cmake/rasp/rasp-config.cmake \
         babeltrace2/plugins/rasp-bt2-plugin.so; do
  [ -e "$libdir/$f" ] || fail "$f not installed in $libdir"
done
for h in rasp.h inline.h events.h event-meta.h export.h; do
  [ -f "$P/include/rasp/$h" ] || fail "rasp/$h not installed"
done
[ -f "$P/share/man/man1/rasp.1" ] || fail "man page not installed"
[ -x "$P/bin/rasp" ] || fail "rasp not installed"
if grep -rq "/usr/local" "$libdir/pkgconfig/rasp.pc"; then fail "rasp.pc names /usr/local"; fi

# The plugin, from the prefix, when babeltrace2 is told where.
babeltrace2 --omit-home-plugin-path --omit-system-plugin-path \
  --plugin-path="$libdir/babeltrace2/plugins" help sink.rasp.report >/dev/null ||
  fail "babeltrace2 cannot load the installed plugin"

# The command: no LD_LIBRARY_PATH, no plugin path, and no plugin directory at all.
mv "$libdir/babeltrace2" "$stage/plugins-moved"
env -u LD_LIBRARY_PATH -u BABELTRACE_PLUGIN_PATH "$P/bin/rasp" report "$trace_in" \
  >"$stage/report.txt" 2>&1 || { cat "$stage/report.txt"; fail "installed rasp report failed"; }
grep -q '^TOTAL ' "$stage/report.txt" || fail "installed rasp report printed no table"
mv "$stage/plugins-moved" "$libdir/babeltrace2"

# A program built through pkg-config alone, its rpath left to the user as usual.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --variable=includedir rasp)" -ef "$P/include" ] || fail "rasp.pc includedir"
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$stage/installed-prog" "$src" \
  $(pkg-config --cflags --libs rasp) -Wl,-rpath,"$libdir"
# -O2: rasp/inline.h's path is compiled in only where the size is a constant to the compiler.
nm -D --undefined-only "$stage/installed-prog" | grep -q rasp_inline_cache_v1 ||
  fail "installed-prog does not use rasp/inline.h's path (no reference to rasp_inline_cache_v1)"
if ldd "$stage/installed-prog" | grep -q lttng; then
  fail "the program depends on LTTng at link time"
fi

# A program built through find_package(rasp CONFIG): three lines of CMake outside the tree.
mkdir -p "$stage/consumer-project"
cp "$src" "$stage/consumer-project/prog.c"
cat >"$stage/consumer-project/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(uses_rasp C)
find_package(rasp CONFIG REQUIRED)
add_executable(prog prog.c)
target_link_libraries(prog PRIVATE rasp::rasp)
CM
cmake -S "$stage/consumer-project" -B "$stage/consumer-build" -DCMAKE_PREFIX_PATH="$P" \
  >"$stage/consumer.log" 2>&1 || { cat "$stage/consumer.log"; fail "find_package(rasp) failed"; }
cmake --build "$stage/consumer-build" >>"$stage/consumer.log" 2>&1 ||
  { cat "$stage/consumer.log"; fail "building against rasp::rasp failed"; }

for prog in "$stage/installed-prog" "$stage/consumer-build/prog"; do
  session="rasp-install-$$"
  trap 'lttng destroy "$session" >/dev/null 2>&1 || true' EXIT
  rm -rf "$stage/trace"
  lttng create "$session" --output="$stage/trace" >/dev/null
  lttng enable-event -u -s "$session" 'DotNETRuntime:AllocationSampled' >/dev/null
  # vpid: other programs of this user may fire the same event meanwhile; count only ours.
  lttng add-context -u -s "$session" -t vpid >/dev/null
  lttng start "$session" >/dev/null
  out=$(env -u LD_PRELOAD -u LD_LIBRARY_PATH -u RASP_LTTNG -u RASP_LTTNG_PROVIDER \
    -u RASP_SAMPLING LTTNG_UST_REGISTER_TIMEOUT=-1 "$prog")
  lttng stop "$session" >/dev/null
  lttng destroy "$session" >/dev/null
  trap - EXIT
  echo "$prog: $out"
  samples=$(echo "$out" | sed -n 's/^samples=\([0-9]*\) .*/\1/p')
  pid=$(echo "$out" | sed -n 's/.* pid=\([0-9]*\) .*/\1/p')
  recorded=$(babeltrace2 "$stage/trace" | grep 'DotNETRuntime:AllocationSampled' |
    grep -c "vpid = $pid }" || true)
  echo "$recorded events recorded"
  case "$out" in *"provider=loaded"*) ;; *) fail "installed provider not loaded" ;; esac
  [ "$samples" -gt 0 ] || fail "no samples (sampling did not start under the session)"
  [ "$recorded" = "$samples" ] || fail "$samples samples emitted, $recorded recorded"
done
# Any program, with the installed librasp-malloc.so preloaded under a plain lttng session:
# it finds librasp beside it (its rpath), and its samples are of the family malloc.
cat >"$stage/plain.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void)
{
	for (int i = 0; i < 20000; i++)
		free(malloc(1000 + (size_t)i % 100));
	printf("%d\n", (int)getpid());
	return 0;
}
C
cc -O2 -fno-builtin -o "$stage/plain" "$stage/plain.c"
session="rasp-install-malloc-$$"
trap 'lttng destroy "$session" >/dev/null 2>&1 || true' EXIT
rm -rf "$stage/trace"
lttng create "$session" --output="$stage/trace" >/dev/null
lttng enable-event -u -s "$session" 'DotNETRuntime:AllocationSampled' >/dev/null
lttng add-context -u -s "$session" -t vpid >/dev/null
lttng start "$session" >/dev/null
pid=$(env -u LD_LIBRARY_PATH -u RASP_LTTNG -u RASP_LTTNG_PROVIDER -u RASP_SAMPLING \
  LD_PRELOAD="$libdir/librasp-malloc.so" LTTNG_UST_REGISTER_TIMEOUT=-1 "$stage/plain")
lttng stop "$session" >/dev/null
lttng destroy "$session" >/dev/null
trap - EXIT
recorded=$(babeltrace2 "$stage/trace" | grep 'DotNETRuntime:AllocationSampled' |
  grep "vpid = $pid }" | grep -c 'TypeName = "malloc"' || true)
echo "librasp-malloc.so preloaded: $recorded malloc samples recorded"
[ "$recorded" -gt 0 ] || fail "no malloc samples from a program with librasp-malloc.so preloaded"
echo "PASS: installed runtime, provider, headers, pkg-config file, CMake package, command, plugin and librasp-malloc.so"
