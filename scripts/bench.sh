#!/usr/bin/env bash
# trident's performance benchmarks: every figure of docs/performance.md as a ratio measured
# in this run, with its target, and the table written back into docs/performance.md; then
# the step against the plain libtorch loop, checked against its recorded ratio
# (bench/step_speed.py, bench/results/step_speed.json): exits 1 when that ratio slipped.
#   scripts/bench.sh [--steps N] [--no-doc]
#   scripts/bench.sh --step-speed [--record]   that check alone (--record: a new figure)
# Run it on an idle machine: other work on the cores shows up in every ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=6 doc=docs/performance.md only_step_speed=0 record=()
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --no-doc) doc=""; shift ;;
    --step-speed) only_step_speed=1; shift ;;
    --record) record=(--record); shift ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
scripts/setup.sh
scripts/build.sh --target trident matmul_ceiling gpt_baseline >/dev/null
if [ $only_step_speed = 0 ]; then
  python3 bench/performance.py build --steps "$steps" ${doc:+--doc "$doc"}
fi
python3 bench/step_speed.py build --steps "$steps" "${record[@]}"
