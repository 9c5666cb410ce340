#!/usr/bin/env bash
# `trident schedule` through the program's command line: the report of pp 4 x 8 micro-batches,
# --help, and every bad argument exits 2 with one message naming it and nothing on stdout.
set -u
trident=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$trident" schedule --pp 4 --micro-batches 8) || fail "pp 4 x m 8 exited $?"
for line in "  stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7" \
  "  stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7" \
  "  stage 0 |F0F1F2F3............B0  F4B1  F5B2  F6B3  F7B4  ..B5  ..B6  ..B7  |" \
  "bubble fraction: 0.272727 (idle / total stage-time); (p-1)/(m+p-1) = 3/11 = 0.272727"; do
  printf '%s\n' "$out" | grep -qxF -- "$line" || fail "no line '$line' in:
$out"
done
printf '%s\n' "$out" | grep -q "^checker: ok" || fail "checker did not accept: $out"

out=$("$trident" schedule --pp=2 --micro-batches=2 --schedule gpipe --full) || fail "gpipe --full exited $?"
printf '%s\n' "$out" | grep -qxF "  stage 1: RA0 F0 RA1 F1 B0 SG0 B1 SG1 RED OPT" \
  || fail "no instructions of stage 1 in: $out"

# Interleaved 1F1B with two chunks per stage and ZB-H1: timelines, bubbles against their
# formulas, the checker's verdict.
out=$("$trident" schedule --pp 4 --micro-batches 8 --schedule interleaved-1f1b --virtual-stages 2) \
  || fail "interleaved-1f1b exited $?"
for line in "  stage 3: F0 F1 F2 F3 F0c1 B0c1 F1c1 B1c1 F2c1 B2c1 F3c1 B3c1 F4 B0 F5 B1 F6 B2 F7 B3 F4c1 B4c1 F5c1 B5c1 F6c1 B6c1 F7c1 B7c1 B4 B5 B6 B7" \
  "bubble fraction: 0.157895 (idle / total stage-time); (p-1)/(v*m+p-1) = 3/19 = 0.157895"; do
  printf '%s\n' "$out" | grep -qxF -- "$line" || fail "no line '$line' in:
$out"
done
printf '%s\n' "$out" | grep -q "^  stage 0 |F0  F1  F2  F3  F0c1F1c1F2c1F3c1F4  F5  F6  \.\.\.\." \
  || fail "no interleaved timeline in: $out"
printf '%s\n' "$out" | grep -q "^checker: ok" || fail "checker did not accept: $out"

out=$("$trident" schedule --pp 4 --micro-batches 8 --schedule zb-h1) || fail "zb-h1 exited $?"
for line in "  stage 0: F0 F1 F2 F3 BI0 W0 F4 BI1 W1 F5 BI2 W2 F6 BI3 W3 F7 BI4 W4 BI5 W5 BI6 W6 BI7 W7" \
  "  stage 3 |.........F0 BI0F1 BI1F2 BI2F3 BI3W0 F4 BI4W1 F5 BI5W2 F6 BI6W3 F7 BI7W4 W5 W6 W7 |" \
  "bubble fraction: 0.111111 (idle / total stage-time); (p-1)(F+B-W)/(m(F+B+W)+(p-1)(F+B-W)) = 0.111111"; do
  printf '%s\n' "$out" | grep -qxF -- "$line" || fail "no line '$line' in:
$out"
done
printf '%s\n' "$out" | grep -q "^checker: ok" || fail "checker did not accept: $out"

out=$("$trident" schedule --help) || fail "--help exited $?"
printf '%s\n' "$out" | grep -q "^usage: trident schedule --pp P --micro-batches M" \
  || fail "--help prints no usage: $out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check_bad() {  # one run each: starting trident (libtorch's libraries) takes most of a second
  local message=$1
  shift
  local out err code
  "$trident" schedule "$@" >"$tmp/out" 2>"$tmp/err"
  code=$?
  out=$(cat "$tmp/out") err=$(cat "$tmp/err")
  [ "$code" -eq 2 ] || fail "schedule $* exited $code, not 2"
  [ -z "$out" ] || fail "schedule $* printed: $out"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "schedule $*: not one line: $err"
  printf '%s\n' "$err" | grep -qF -- "trident schedule: $message" \
    || fail "schedule $*: expected '$message', got: $err"
}
check_bad "--pp expects a positive integer, got '0'" --pp 0 --micro-batches 4
check_bad "--pp expects a positive integer, got '2x'" --pp 2x --micro-batches 4
check_bad "--pp expects a positive integer, got 'x'" --pp x --micro-batches 4
check_bad "--micro-batches needs a value" --pp 2 --micro-batches
check_bad "--pp is required" --micro-batches 4
check_bad "--micro-batches is required" --pp 2
check_bad "--pp and --micro-batches are required" --schedule gpipe
check_bad "--schedule must be 1f1b, gpipe, interleaved-1f1b or zb-h1, got 'zb'" --pp 2 --micro-batches 4 --schedule zb
check_bad "unknown option --verbose" --pp 2 --micro-batches 4 --verbose
check_bad "--backward-cost expects a positive number, got '-1'" --pp 2 --micro-batches 4 \
  --backward-cost -1
check_bad "unexpected argument 'extra'" --pp 2 --micro-batches 4 extra
check_bad "schedule reads no config, so --set has nothing to set" --pp 2 --micro-batches 4 \
  --set train.steps=1
check_bad "schedule 1f1b runs one model chunk per stage, got 2 virtual stages" --pp 2 \
  --micro-batches 4 --virtual-stages 2
check_bad "interleaved-1f1b: the micro-batches (6) must be a multiple of the stages (4)" --pp 4 \
  --micro-batches 6 --schedule interleaved-1f1b --virtual-stages 2
echo "schedule_cli: ok"
