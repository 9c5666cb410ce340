#!/usr/bin/env bash
# Formats trident's C++ sources with .clang-format; `scripts/format.sh --check` only lists
# the files that differ and exits non-zero when there are any (scripts/test.sh runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' '*.cu' 2>/dev/null || find src tests bench -name '*.cpp' -o -name '*.h')
if ! command -v clang-format >/dev/null; then
  echo "format: clang-format is missing (apt-get install clang-format)" >&2
  exit 1
fi
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: these files differ from .clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
