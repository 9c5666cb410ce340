#!/usr/bin/env bash
# bench/autotune.py's judgement and confirmation rounds, with a fake trainer
# (tests/scripts/autotune_judging.py): nothing trains, nothing is timed.
set -u
root=$2
/usr/bin/python3 "$root/tests/scripts/autotune_judging.py" "$root"
