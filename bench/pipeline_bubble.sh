#!/usr/bin/env bash
# Measured pipeline bubble at pp 4, m 8 (1F1B) against the schedule's (p-1)/(m+p-1):
# the idle fraction of the stages' time in each step, from the run's trace.
# `bench/pipeline_bubble.sh [STEPS]`. With more ranks than cores the ranks share cores,
# which adds to the measured idle time; the script says how many cores it had.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-8}
trident=build/trident
[ -x "$trident" ] || scripts/build.sh --target trident >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun -np 4 --oversubscribe --bind-to none "$trident" train configs/tiny.toml \
  --set parallel.dp=1 --set parallel.pp=4 --set parallel.tp=1 --set parallel.schedule=1f1b \
  --set model.hidden=256 --set model.seq_len=128 --set model.vocab=1024 \
  --set train.micro_batch_size=2 --set train.global_batch_size=16 --set train.threads=1 \
  --set train.steps="$steps" --set logging.trace="$tmp/trace.json" >/dev/null
python3 - "$tmp/trace.json" "$steps" "$(nproc)" <<'PY'
import json, sys
trace, steps, cores = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
p, m = 4, 8
formula = (p - 1) / (m + p - 1)
fractions = []
for step in range(2, steps + 1):  # the first step allocates and warms up
    ev = [e for e in events if e["args"]["step"] == step]
    start = min(e["ts"] for e in ev)
    compute = [e for e in ev if e["cat"] in ("forward", "backward")]
    end = max(e["ts"] + e["dur"] for e in compute)
    busy = sum(e["dur"] for e in compute)
    fractions.append(1 - busy / (p * (end - start)))
measured = sorted(fractions)[len(fractions) // 2]
print(f"bubble at pp {p}, m {m}: measured {measured:.3f} (median of {len(fractions)} steps), "
      f"schedule {formula:.3f}, ratio {measured / formula:.2f} (target within 10%); "
      f"{p} ranks on {cores} cores")
PY
