#!/usr/bin/env bash
# lint.format: every C++ file of src/, include/, tests/, tools/ and bench/ is as clang-format
# writes it under .clang-format, with Debian's clang-format 14 (requirements-rebuild.txt,
# [test]): another major version formats some constructs otherwise.
#   scripts/check-format.sh         check; lists each file that differs (exit 1)
#   scripts/check-format.sh --fix   rewrite the files in place
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *) echo "usage: scripts/check-format.sh [--fix]" >&2; exit 2 ;;
esac
tool=""
for t in clang-format-14 clang-format; do
  if command -v "$t" >/dev/null && "$t" --version | grep -q 'version 14\.'; then tool=$t; break; fi
done
if [ -z "$tool" ]; then
  echo "check-format: error: clang-format 14 is missing (a test dependency: scripts/deps.sh --test)" >&2
  exit 1
fi
mapfile -t files < <(find src include tests tools bench -type f \( -name '*.cpp' -o -name '*.h' \) \
  -not -path 'tests/fuzz/corpus/*' | LC_ALL=C sort)
if [ "$fix" = 1 ]; then
  "$tool" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
if ! "$tool" --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
  for f in "${files[@]}"; do  # name each one
    "$tool" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  [ ${#bad[@]} -gt 0 ] || bad=("(clang-format failed: $("$tool" --dry-run --Werror "${files[@]}" 2>&1 | head -n 3))")
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not as $tool writes them:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "  fix: scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files as $tool writes them"
