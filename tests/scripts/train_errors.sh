#!/usr/bin/env bash
# Bad input to `trident train` stops every rank before training with one message and a
# non-zero exit code: a missing data file, a layout that does not fit the ranks, a
# device this build or node does not have, and sequence parallelism without tp.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
run() { mpirun -np "$1" --oversubscribe --bind-to none "$trident" train "${@:2}" --set logging.run_dir=none; }

err=$(run 2 "$root/configs/tiny.toml" --set parallel.dp=2 --set data.source=/nonexistent/tokens.bin 2>&1)
code=$?
[ $code -ne 0 ] || fail "a missing data file exited 0"
n=$(echo "$err" | grep -c "/nonexistent/tokens.bin")
[ "$n" -eq 1 ] || fail "expected one message naming the file, got $n:
$err"
echo "$err" | grep -q "^trident: error:" || fail "no 'trident: error:' line: $err"
echo "$err" | grep -q "^step " && fail "training started: $err"

err=$(run 2 "$root/configs/tiny.toml" 2>&1)
[ $? -ne 0 ] || fail "tiny.toml (dp=pp=tp=1) on 2 ranks exited 0"
echo "$err" | grep -q "parallel" || fail "layout error does not name the keys: $err"
[ "$(echo "$err" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message: $err"
# train.device = "cuda" where this build or node cannot: one message on every rank's behalf,
# exit code 2, naming the key and the way out; nothing trains.
err=$(run 2 "$root/configs/tiny.toml" --set parallel.dp=2 --set train.device=cuda 2>&1)
code=$?
[ $code -eq 2 ] || fail "train.device=cuda exited $code, not 2: $err"
[ "$(echo "$err" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message: $err"
echo "$err" | grep -q 'train.device = "cuda"' || fail "the message does not name train.device: $err"
echo "$err" | grep -q 'train.device = "cpu"' || fail "the message does not give the fix: $err"
echo "$err" | grep -q "^step " && fail "training started: $err"
# Sequence parallelism splits the sequence over tp: with tp = 1 it is refused, naming the fix.
err=$(run 2 "$root/configs/tiny.toml" --set parallel.dp=2 --set parallel.sequence_parallel=true 2>&1)
code=$?
[ $code -eq 2 ] || fail "sequence_parallel with tp = 1 exited $code, not 2: $err"
[ "$(echo "$err" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message: $err"
echo "$err" | grep -q "parallel.sequence_parallel = true needs parallel.tp > 1" ||
  fail "the message does not name sequence_parallel and tp: $err"
echo "$err" | grep -q "^step " && fail "training started: $err"

echo "train_errors: ok"
