#!/usr/bin/env bash
# A SIGTERM that reaches a rank during the start-up (as a scheduler that preempts right after
# allocating sends it), before the first step: every rank exits with
# checkpoint.preempt_exit_code, says that nothing needed saving, and writes no checkpoint.
# The signal goes out as soon as the rank catches SIGTERM (its SigCgt in /proc), long before
# a model of this size has been built.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
. "$root/tests/scripts/signal_common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

catches_sigterm() {  # whether pid $1 has a handler for SIGTERM (bit 15 of SigCgt)
  local mask
  mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$mask" ] && (( (16#$mask >> 14) & 1 ))
}

mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
  --set parallel.dp=2 --set model.layers=8 --set model.hidden=512 --set model.heads=8 \
  --set train.steps=5 --set checkpoint.save_every=1 --set checkpoint.preempt_exit_code=75 \
  --set logging.run_dir=run >run.log 2>&1 &
launcher=$!
pid=$(wait_for_rank "$launcher" 1)
[ -n "$pid" ] || fail "rank 1 never started: $(cat run.log)"
for _ in $(seq 1 2000); do
  catches_sigterm "$pid" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.005
done
grep -q "^step " run.log && fail "the first step finished before the signal could be sent"
kill -TERM "$pid"
wait "$launcher"
code=$?
[ $code -eq 75 ] || fail "exit code $code, not checkpoint.preempt_exit_code = 75: $(tail -5 run.log)"
grep -q "preempted by SIGTERM before the first step: nothing needed saving; exit code 75" run.log ||
  fail "no message: $(tail -5 run.log)"
ls run/checkpoints/step_* >/dev/null 2>&1 && fail "a checkpoint was written: $(ls run/checkpoints)"
echo "SIGTERM during the start-up: exit 75, nothing saved"
