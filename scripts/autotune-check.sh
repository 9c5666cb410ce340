#!/usr/bin/env bash
# How close trident train --auto's choice comes to the best configuration measured, on
# models its calibration never timed: bench/autotune.py (each case's fixed grid, alternated
# rounds; GPT-2 and Llama, 2, 4 and 8 ranks, emulated nodes, memory caps that force ZeRO 3
# or the nvme tier). Prints a line a case, then writes the table into docs/planner.md and
# appends the run, with its measured grids, to bench/results/autotune.md.
#   scripts/autotune-check.sh [--cases A,B] [--rounds R] [--steps S] [--bind core|none] [--measure K]
# Run it as root on an idle machine: other work on the cores shows up in every step time;
# the capped cases need a memory cgroup, the emulated nodes network namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
scripts/setup.sh
scripts/build.sh --target trident >/dev/null
python3 bench/autotune.py build --markdown docs/planner.md --results bench/results/autotune.md "$@"
