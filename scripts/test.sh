#!/usr/bin/env bash
# Runs the whole test suite: installs dependencies, builds, runs CTest.
#   scripts/test.sh                      plain build in build/
#   scripts/test.sh --sanitize address   ASan+UBSan build in build-asan/
#   scripts/test.sh --sanitize thread    TSan build in build-tsan/
# Extra arguments after -- go to ctest (e.g. -- -R provider).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sanitize=""
build="$root/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize)
      [ $# -ge 2 ] || { echo "test.sh: --sanitize needs 'address' or 'thread'" >&2; exit 2; }
      case "$2" in
        address) build="$root/build-asan" ;;
        thread) build="$root/build-tsan" ;;
        *) echo "test.sh: --sanitize '$2' is not 'address' or 'thread'" >&2; exit 2 ;;
      esac
      sanitize="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

"$root/scripts/deps.sh"
cmake -S "$root" -B "$build" -DRASP_SANITIZE="$sanitize" >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
# Integration tests wait for the session daemon to register short-lived programs.
export LTTNG_UST_REGISTER_TIMEOUT=-1
status=0
ctest --output-on-failure "$@" || status=$?
# ctest marks a skipped test "***Skipped" without its reason; the tests print one (a line
# starting "skip", e.g. "skipped: ../shared/data/dotnet not present"): shown here.
log=Testing/Temporary/LastTest.log
if [ -r "$log" ] && grep -qi '^skip' "$log"; then
  echo "== skips and their reasons"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 } tolower($0) ~ /^skip/ { print "  " name ": " $0 }' "$log"
fi
exit "$status"
