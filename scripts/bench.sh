#!/usr/bin/env bash
# trident's performance benchmarks: every figure of docs/performance.md as a ratio measured
# in this run, with its target, and the table written back into docs/performance.md.
#   scripts/bench.sh [--steps N] [--no-doc]
# Run it on an idle machine: other work on the cores shows up in every ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=6 doc=docs/performance.md
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --no-doc) doc=""; shift ;;
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
scripts/setup.sh
scripts/build.sh --target trident matmul_ceiling gpt_baseline >/dev/null
python3 bench/performance.py build --steps "$steps" ${doc:+--doc "$doc"}
