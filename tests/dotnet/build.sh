#!/usr/bin/env bash
# Restores and builds the .NET test programs (Oracle, NetTraceDump, Generics) and the pinned
# dotnet-trace tool, with every output under OUT (bin/ and obj/ through Directory.Build.props,
# the programs in OUT/<name>), never in the source tree. CTest's dotnet-build fixture.
#   build.sh DOTNET OUT
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: build.sh DOTNET OUT" >&2; exit 2; }
dotnet=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

# Quiet, no telemetry, no build servers left running after the test.
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
export DOTNET_CLI_USE_MSBUILD_SERVER=0 MSBUILDDISABLENODEREUSE=1
export RASP_DOTNET_OUT="$out"
mkdir -p "$out"

run() { echo "+ $*" >&2; "$@"; }
run "$dotnet" --version
run "$dotnet" tool restore
for proj in NetTraceDump Oracle Generics; do
  # Locked mode: the restore fails rather than resolve anything but packages.lock.json.
  run "$dotnet" build "$proj/$proj.csproj" -c Release -o "$out/$proj" \
      --disable-build-servers -nodeReuse:false -p:RestoreLockedMode=true
done
version=$(run "$dotnet" tool run dotnet-trace -- --version)
echo "$version"
case "$version" in
  *10.0.750501*) ;;
  *) echo "FAIL: dotnet-trace --version printed '$version', not 10.0.750501"; exit 1 ;;
esac
for f in "$out/Oracle/Oracle.dll" "$out/NetTraceDump/NetTraceDump.dll" "$out/Generics/Generics.dll"; do
  [ -f "$f" ] || { echo "FAIL: $f was not built"; exit 1; }
done
echo "built: $out/Oracle/Oracle.dll $out/NetTraceDump/NetTraceDump.dll $out/Generics/Generics.dll; dotnet-trace $version"
