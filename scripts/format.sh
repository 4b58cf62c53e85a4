#!/usr/bin/env bash
# clang-format over every tracked C source and header (the style is .clang-format at the root).
#   scripts/format.sh           reformat in place
#   scripts/format.sh --check   change nothing; list the files that drift and exit 1 if any
# Needs clang-format (Debian clang-format: scripts/deps.sh --format installs it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "format.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
command -v clang-format >/dev/null || { echo "format.sh: clang-format not found (Debian: clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "$check" = 0 ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
drift=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || drift+=("$f")
done
if [ "${#drift[@]}" -gt 0 ]; then
  echo "format.sh: ${#drift[@]} file(s) differ from .clang-format (run scripts/format.sh):" >&2
  printf '  %s\n' "${drift[@]}" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files match .clang-format"
