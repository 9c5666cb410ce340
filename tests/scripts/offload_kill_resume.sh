#!/usr/bin/env bash
# ZeRO-Infinity's nvme tier under a crash: dp2 x pp2, ZeRO-3 with the optimizer's and the
# parameters' shards offloaded (fp64, 4 ranks). A random rank is killed with SIGKILL while
# a step runs; the restart (checkpoint.load = "auto") rebuilds the tier from the latest
# checkpoint and saves in the background (checkpoint.async), and the metrics and final
# weights must equal, bit for bit, an uninterrupted run of the same layout in memory.
# FAULT_SEED picks the rank and step.
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
steps=12
common=(--set parallel.dp=2 --set parallel.pp=2 --set parallel.zero_stage=3
  --set parallel.zero3_persist_below=0 --set train.precision=fp64 --set train.steps=$steps
  --set train.log_every=1 --set train.threads=1 --set checkpoint.save_every=2
  --set checkpoint.load=auto)
nvme=(--set parallel.offload_optimizer=nvme --set parallel.offload_params=nvme
  --set parallel.nvme_path="$tmp/tier" --set parallel.offload_block_size=4096
  --set parallel.offload_buffer_count=3)
launch() {  # $1: run directory; the rest: more --set; runs in the background, sets $job
  local dir=$1; shift
  mpirun -np 4 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
    "${common[@]}" --set logging.run_dir="$dir" "$@" >>"$dir.log" 2>&1 &
  job=$!
}
log_step() {  # the newest step the log $1 reports
  sed -n 's|^step \([0-9]*\)/.*|\1|p' "$1" 2>/dev/null | tail -1 | grep . || echo 0
}

launch "$tmp/ref"
wait "$job" || fail "uninterrupted run in memory: $(tail -5 "$tmp/ref.log")"

run=$tmp/run
launch "$run" "${nvme[@]}"
target=$(( 5 + RANDOM % 3 )) rank=$(( RANDOM % 4 ))
pid=$(wait_for_rank "$job" "$rank")
[ -n "$pid" ] || fail "no process for rank $rank"
while [ "$(log_step "$run.log")" -lt "$target" ]; do
  kill -0 "$job" 2>/dev/null || fail "the offloaded run ended before step $target: $(tail -5 "$run.log")"
  sleep 0.02
done
kill -s KILL "$pid"
grep -q "^offload: nvme" "$run.log" || fail "no offload header line: $(head -5 "$run.log")"
wait "$job" && fail "SIGKILL to rank $rank: the job exited 0"
echo "SIGKILL to rank $rank during step $(( $(log_step "$run.log") + 1 ));" \
  "latest checkpoint $(cat "$run/checkpoints/latest")"
[ -z "$(ls -A "$tmp/tier")" ] || fail "the killed run left tier files: $(ls "$tmp/tier")"

# The restart saves in the background: each rank streams its file from the tier at the
# step boundary, and the commit is left to the background.
launch "$run" "${nvme[@]}" --set checkpoint.async=true
wait "$job" || fail "the resumed offloaded run: $(tail -5 "$run.log")"
grep -q "resumed from" "$run.log" || fail "never resumed"

python3 - "$tmp/ref/metrics.jsonl" "$run/metrics.jsonl" "$steps" <<'PY' || fail "losses differ"
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1])]
got = [json.loads(l) for l in open(sys.argv[2])]
steps = int(sys.argv[3])
# The killed run logged some steps twice (those after its latest checkpoint): keep the last.
by_step = {r["step"]: r for r in got}
assert sorted(by_step) == list(range(1, steps + 1)), sorted(by_step)
for a in ref:
    b = by_step[a["step"]]
    assert a["loss"] == b["loss"] and a["grad_norm"] == b["grad_norm"], (a, b)
print(f"{steps} losses and gradient norms equal the uninterrupted in-memory run's exactly")
PY
# The tiny model's buckets each fit one piece of the tier, so the offloaded run cuts its
# slices where the run in memory does and the files compare byte for byte (a bucket over
# several pieces is stored in more slices: docs/offload.md, Checkpoints).
for f in "$tmp/ref/checkpoints/step_$steps"/*.safetensors; do
  cmp -s "$f" "$run/checkpoints/step_$steps/$(basename "$f")" || fail "final weights differ: $(basename "$f")"
done
echo "final weights and optimizer states equal bit for bit"
echo "offload_kill_resume: ok"
