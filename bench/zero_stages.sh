#!/usr/bin/env bash
# Tokens/s of ZeRO stages 0, 1 and 2 at dp 2 (one thread per rank), as ratios to stage 0,
# measured in one run: `bench/zero_stages.sh [CONFIG] [STEPS]`. Stage 1 and 2 should cost no
# more than 5% over stage 0. Prints one line per stage and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/tiny.toml}
steps=${2:-30}
trident=build/trident
[ -x "$trident" ] || scripts/build.sh --target trident >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for stage in 0 1 2; do
  mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$config" \
    --set parallel.dp=2 --set parallel.pp=1 --set parallel.tp=1 \
    --set parallel.zero_stage=$stage --set train.threads=1 --set train.steps="$steps" \
    --set train.log_every=1 --set logging.metrics="$tmp/zero$stage.jsonl" >/dev/null
done
python3 - "$tmp" <<'PY'
import json, statistics, sys
tmp = sys.argv[1]
rate = {}
for stage in (0, 1, 2):
    rows = [json.loads(l) for l in open(f"{tmp}/zero{stage}.jsonl")]
    # the median over steps after the first three (warm-up: allocation, first touches)
    rate[stage] = statistics.median(r["tokens_per_s"] for r in rows[3:])
print("ZeRO stage | tokens/s | ratio to stage 0 | target")
for stage in (0, 1, 2):
    target = "" if stage == 0 else ">= 0.95"
    print(f"{stage:10d} | {rate[stage]:8.0f} | {rate[stage] / rate[0]:16.3f} | {target}")
PY
