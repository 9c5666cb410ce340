#!/usr/bin/env bash
# Prints the slowest tests of ctest's last run, slowest first, with their times, and the
# sum over every test of that run: `scripts/slowest-tests.sh [count] [build dir]` (10, build).
# Reads <build>/Testing/Temporary/LastTest.log (the last run only, its -R selection
# included); without one, CTestCostData.txt (ctest's running average per test).
set -euo pipefail
count=${1:-10}
build=${2:-"$(dirname "$0")/../build"}
case $count in '' | *[!0-9]*)
  echo "slowest-tests: the count must be a number, not '$count'" >&2
  exit 2
  ;;
esac
dir=$build/Testing/Temporary
log=$dir/LastTest.log
costs=$dir/CTestCostData.txt

if [ -s "$log" ]; then
  source="$log"
  # Each test's block starts `N/M Test: name`; after its output, `<end of output>` and then
  # `Test time =   1.23 sec` (a line of the test's own output may read the same).
  times=$(awk '
    /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); name = $0; ended = 0; next }
    /^<end of output>$/ { ended = 1; next }
    ended && /^Test time = / { printf "%s\t%s\n", $4, name; ended = 0 }
  ' "$log")
elif [ -s "$costs" ]; then
  source="$costs (running averages)"
  # `name runs average_seconds`, up to the `---` line that starts the list of failures.
  times=$(awk '/^---/ { exit } NF == 3 { printf "%s\t%s\n", $3, $1 }' "$costs")
else
  echo "slowest-tests: no $log or $costs: run ctest in $build first" >&2
  exit 1
fi
if [ -z "$times" ]; then
  echo "slowest-tests: no test times in $source" >&2
  exit 1
fi

total=$(awk -F'\t' '{ s += $1 } END { printf "%.1f", s }' <<<"$times")
tests=$(wc -l <<<"$times")
echo "slowest $count of $tests tests ($total s in all), from $source:"
# awk rather than head stops nothing early: sort never sees a closed pipe.
sort -t$'\t' -k1,1 -g -r <<<"$times" |
  awk -F'\t' -v n="$count" 'NR <= n { printf "%8.1f s  %s\n", $1, $2 }'
