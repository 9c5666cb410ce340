#!/usr/bin/env bash
# scripts/slowest-tests.sh on a made-up build folder: from a LastTest.log of 12 tests it
# prints the ten slowest, slowest first, and the sum of all 12; without the log it falls
# back on CTestCostData.txt; with neither, or a count that is not a number, it says so.
set -u
root=$2
script=$root/scripts/slowest-tests.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
dir=$tmp/build/Testing/Temporary
mkdir -p "$dir"

# Test i takes i/10 s (test_12 1.2 s), in a shuffled order, as ctest writes its blocks.
for i in 7 3 12 1 9 5 11 2 8 10 4 6; do
  cat >>"$dir/LastTest.log" <<LOG
$i/12 Testing: test_$i
$i/12 Test: test_$i
Command: "/bin/true" "--gtest_filter=x"
Directory: $tmp/build/tests
"test_$i" start time: Jan 01 00:00 UTC
Output:
----------------------------------------------------------
Test time = 9.99 sec in the output of a test is not its time
<end of output>
Test time =   $(awk -v i="$i" 'BEGIN { printf "%.2f", i / 10 }') sec
----------------------------------------------------------
Test Passed.
"test_$i" end time: Jan 01 00:00 UTC
"test_$i" time elapsed: 00:00:00
----------------------------------------------------------

LOG
done
out=$("$script" 10 "$tmp/build") || fail "exit $?: $out"
echo "$out"
want="slowest 10 of 12 tests (7.8 s in all), from $dir/LastTest.log:"
[ "$(echo "$out" | head -1)" = "$want" ] || fail "first line: $(echo "$out" | head -1)"
got=$(echo "$out" | tail -n +2 | awk '{ print $3 "=" $1 }' | tr '\n' ' ')
[ "$got" = "test_12=1.2 test_11=1.1 test_10=1.0 test_9=0.9 test_8=0.8 test_7=0.7 test_6=0.6 test_5=0.5 test_4=0.4 test_3=0.3 " ] ||
  fail "the ten slowest: $got"
[ "$("$script" 3 "$tmp/build" | wc -l)" -eq 4 ] || fail "a count of 3 printed other than 3 tests"

# Without LastTest.log: ctest's running averages, up to the list of failed tests.
rm "$dir/LastTest.log"
printf 'fast 3 0.5\nslow 2 4.25\nmiddle 1 2\n---\nslow\n' >"$dir/CTestCostData.txt"
out=$("$script" 2 "$tmp/build") || fail "exit $? from the cost data: $out"
echo "$out"
[ "$(echo "$out" | tail -n +2 | awk '{ print $3 }' | tr '\n' ' ')" = "slow middle " ] ||
  fail "from the cost data: $out"
echo "$out" | head -1 | grep -q "of 3 tests (6.8 s in all)" || fail "cost data header: $out"

rm "$dir/CTestCostData.txt"
out=$("$script" 10 "$tmp/build" 2>&1) && fail "no ctest run, yet exit 0: $out"
echo "$out" | grep -q "run ctest in" || fail "no ctest run: $out"
out=$("$script" ten "$tmp/build" 2>&1) && fail "count 'ten' accepted: $out"
echo "$out" | grep -q "must be a number" || fail "count 'ten': $out"
echo "slowest-tests: all checks passed"
