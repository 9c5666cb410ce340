#!/usr/bin/env bash
# How close trident train --auto's choice comes to the best configuration measured, on
# models its calibration never timed: bench/autotune.py (each case's grid, alternated
# rounds). Prints one line a case and the measured grid.
#   scripts/autotune-check.sh [--cases NAME,...] [--rounds R] [--steps S]
# Run it on an idle machine: other work on the cores shows up in every step time.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
scripts/setup.sh
scripts/build.sh --target trident >/dev/null
python3 bench/autotune.py build "$@"
