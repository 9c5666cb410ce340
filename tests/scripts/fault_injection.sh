#!/usr/bin/env bash
# Fault injection on the everyday layout (dp2 x pp2 x tp2, ZeRO-2, fp64, 8 ranks): a random
# rank is sent SIGKILL or SIGTERM at a random step, several times, and a background save is
# crashed mid-file; every restart uses checkpoint.load = "auto" in the same run directory.
# SIGTERM must exit 0 with a checkpoint at the step it landed on (or the next), and in the
# end the metrics and the final weights must equal an uninterrupted run's, bit for bit.
# FAULT_SEED picks the ranks and steps (printed, so that a failure can be replayed).
set -u
trident=$1 root=$2
fail() { echo "FAIL (FAULT_SEED=$seed): $*"; exit 1; }
# shellcheck source=tests/scripts/signal_common.sh
source "$(dirname "$0")/signal_common.sh"
seed=${FAULT_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
echo "FAULT_SEED=$seed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
steps=24
common=(--set parallel.dp=2 --set parallel.pp=2 --set parallel.tp=2 --set parallel.zero_stage=2
  --set train.precision=fp64 --set train.steps=$steps --set train.log_every=1
  --set train.threads=1 --set checkpoint.save_every=2 --set checkpoint.load=auto)
launch() {  # $1: run directory; the rest: more --set; runs in the background, sets $job
  local dir=$1; shift
  mpirun -np 8 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
    "${common[@]}" --set logging.run_dir="$dir" "$@" >>"$dir.log" 2>&1 &
  job=$!
}
last_step() {  # the newest step of the metrics file $1 (0 when none)
  tail -n 1 "$1" 2>/dev/null | python3 -c "import json,sys; l=sys.stdin.read().strip(); print(json.loads(l)['step'] if l else 0)" 2>/dev/null || echo 0
}
log_step() {  # the newest step the current launch's log ($1, from line $2 on) reports (0
  # when none); one process a call, as wait_for_step calls it 50 times a second
  [ -f "$1" ] || { echo 0; return; }
  awk -v from="$2" 'NR >= from && /^step [0-9]+\// { split($2, s, "/"); last = s[1] }
    END { print last + 0 }' "$1"
}
wait_for_step() {  # $1: log file, $2: its first line of this launch, $3: step; prints the
  # step the log has reached; false when the job ended first (the metrics file still holds
  # the previous launch's lines, so the log is read)
  local at
  while at=$(log_step "$1" "$2"); [ "$at" -lt "$3" ]; do
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.02
  done
  echo "$at"
}

started=$(date +%s)
saved=
launch "$tmp/ref"
wait "$job" || fail "uninterrupted run: $(tail -5 "$tmp/ref.log")"

run=$tmp/run
mkdir -p "$run"
# A crash inside a background save: the step's checkpoint is never committed. It comes first,
# at a fixed step, so that it never depends on where the signals below land.
crash_at=4
TRIDENT_CHECKPOINT_FAULT=mid_file@$crash_at launch "$run" --set checkpoint.async=true
wait "$job" && fail "the run with a crash in the background save of step $crash_at exited 0"
[ -d "$run/checkpoints/step_$crash_at" ] && fail "the crashed save of step $crash_at was committed"
[ "$(cat "$run/checkpoints/latest")" = step_2 ] ||
  fail "after the crash in the save of step $crash_at, latest is $(cat "$run/checkpoints/latest"), not step_2"
echo "crash in the background save of step $crash_at: latest is $(cat "$run/checkpoints/latest")"

for kind in KILL TERM KILL TERM; do
  resume_at=$(sed 's/step_//' "$run/checkpoints/latest" 2>/dev/null || echo 0)
  # Steps take about 0.1 s here and the save follows the target by 2-4 steps; the last
  # SIGTERM's save must come before the last step (after it there is nothing to preempt),
  # so targets stay 7 steps short of the end.
  target=$(( resume_at + 2 + RANDOM % 3 ))
  [ $target -le $(( steps - 7 )) ] || target=$(( steps - 7 ))
  rank=$(( RANDOM % 8 ))
  first_line=$(( $(cat "$run.log" 2>/dev/null | wc -l) + 1 ))
  launch "$run"
  pid=$(wait_for_rank "$job" "$rank")
  [ -n "$pid" ] || fail "no process for rank $rank"
  # The signal goes out as soon as the log shows the target step: anything slow in between
  # (a python start on a loaded machine took long enough for 4 steps) lets it land late.
  before=$(wait_for_step "$run.log" "$first_line" "$target") || fail "the run ended before step $target"
  kill -s "$kind" "$pid"
  after=$(last_step "$run/metrics.jsonl")  # the signal landed between these two steps
  wait "$job"
  code=$?
  if [ "$kind" = TERM ]; then
    [ $code -eq 0 ] || fail "SIGTERM to rank $rank: exit code $code, not 0: $(tail -5 "$run.log")"
    saved=$(sed -n 's/^preempted at step \([0-9]*\) by SIGTERM, saved .*/\1/p' "$run.log" | tail -1)
    [ -n "$saved" ] || fail "no preemption message: $(tail -5 "$run.log")"
    # The metrics file is rank 0's, written before each step's boundary agreement; the
    # signalled rank can be one step ahead of it (it may already have sampled its flag at
    # the boundary of step after + 1 while rank 0 is still writing that step), so the save
    # is of the step the signal landed in on that rank or the next: at most after + 2.
    [ "$saved" -ge "$before" ] && [ "$saved" -le $(( after + 2 )) ] ||
      fail "SIGTERM landed after step $before (by step $after) but the save is of step $saved"
    [ -f "$run/checkpoints/step_$saved/index.json" ] || fail "no checkpoint step_$saved"
  else
    [ $code -ne 0 ] || fail "SIGKILL to rank $rank: the job exited 0"
  fi
  echo "SIG$kind to rank $rank after step $before: exit code $code${saved:+, saved step $saved}"
  saved=
done

launch "$run" --set checkpoint.async=true
wait "$job" || fail "the final resumed run: $(tail -5 "$run.log")"
grep -q "resumed from" "$run.log" || fail "never resumed"

python3 - "$tmp/ref/metrics.jsonl" "$run/metrics.jsonl" "$steps" <<'PY' || fail "losses differ"
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1])]
rows = [json.loads(l) for l in open(sys.argv[2])]
steps = int(sys.argv[3])
# Each restart appended the steps after its checkpoint again: the last record of each step
# is the run's, and every record (the killed runs' too) equals the uninterrupted run's.
got = {r["step"]: r for r in rows}
assert sorted(got) == list(range(1, steps + 1)), sorted(got)
assert len(rows) > steps, "no step was logged twice: the restarts did not append"
for b in rows:
    a = ref[b["step"] - 1]
    assert a["loss"] == b["loss"] and a["grad_norm"] == b["grad_norm"], (a, b)
print(f"{steps} losses and gradient norms equal the uninterrupted run's exactly "
      f"({len(rows)} records: the restarts' repeated steps kept)")
PY
for f in "$tmp/ref/checkpoints/step_$steps"/*.safetensors; do
  cmp -s "$f" "$run/checkpoints/step_$steps/$(basename "$f")" || fail "final weights differ: $(basename "$f")"
done
echo "final weights equal bit for bit; $(( $(date +%s) - started )) s"
echo "fault_injection: ok"
