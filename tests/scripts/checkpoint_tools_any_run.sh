#!/usr/bin/env bash
# `trident eval`, `export` and `convert` take a checkpoint of any run trident trains: with
# sequence parallelism (tp2), interleaved 1F1B (pp2, two model chunks per stage) and ZeRO 3
# with parameters and optimizer states in the nvme tier (dp2). Each checkpoint evaluates on
# one rank, exports to Hugging Face files, and converts to one rank with ZeRO 0, whose eval
# gives the original's loss; in float64 the three runs train the same model, so the three
# evaluate alike.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { local np=$1; shift; mpirun -np "$np" --oversubscribe --bind-to none "$trident" "$@"; }
loss_of() { python3 -c "import json,sys; print(repr(json.loads(sys.stdin.read().strip().splitlines()[-1])['loss']))"; }
close() {  # $1 $2 within relative $3
  python3 -c "import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= t*abs(b) else 1)" "$1" "$2" "$3"
}
python3 - "$tmp/tokens.bin" <<'PY'
import random, struct, sys
random.seed(5)
open(sys.argv[1], "wb").write(struct.pack("<600H", *[random.randrange(256) for _ in range(600)]))
PY
common=(--set train.steps=2 --set train.threads=1 --set train.precision=fp64
  --set logging.run_dir=none)

check_run() {  # $1: name; the rest: the layout's --set options (2 ranks)
  local name=$1; shift
  local ck="$tmp/$name/ck"
  run 2 train "$root/configs/tiny.toml" "${common[@]}" "$@" --set checkpoint.dir="$ck" \
    >"$tmp/$name.train.log" 2>&1 || fail "$name: train: $(cat "$tmp/$name.train.log")"
  [ "$(cat "$ck/latest" 2>/dev/null)" = step_2 ] || fail "$name: no checkpoint of step 2 in $ck"

  local one
  one=$(run 1 eval --checkpoint "$ck" --data "$tmp/tokens.bin" --sequences 4 2>&1) ||
    fail "$name: eval: $one"
  local loss
  loss=$(echo "$one" | loss_of) || fail "$name: eval printed $one"

  run 1 export --in "$ck" --out "$tmp/$name/hf" --format hf >"$tmp/$name.export.log" 2>&1 ||
    fail "$name: export: $(cat "$tmp/$name.export.log")"
  [ -f "$tmp/$name/hf/model.safetensors" ] && [ -f "$tmp/$name/hf/config.json" ] ||
    fail "$name: export wrote $(ls "$tmp/$name/hf")"

  run 1 convert --in "$ck" --out "$tmp/$name/one" --set parallel.dp=1 --set parallel.pp=1 \
    --set parallel.tp=1 --set parallel.zero_stage=0 >"$tmp/$name.convert.log" 2>&1 ||
    fail "$name: convert: $(cat "$tmp/$name.convert.log")"
  local converted
  converted=$(run 1 eval --checkpoint "$tmp/$name/one" --data "$tmp/tokens.bin" --sequences 4 2>&1) ||
    fail "$name: eval of the conversion: $converted"
  close "$(echo "$converted" | loss_of)" "$loss" 1e-12 ||
    fail "$name: the conversion evaluates to $(echo "$converted" | loss_of), the checkpoint to $loss"
  echo "$name: eval $loss, export and convert ok"
  losses+=("$loss")
}

losses=()

check_run sequence_parallel --set parallel.dp=1 --set parallel.tp=2 \
  --set parallel.sequence_parallel=true
check_run interleaved --set parallel.dp=1 --set parallel.pp=2 \
  --set parallel.schedule=interleaved-1f1b --set parallel.virtual_stages=2
check_run zero3_nvme --set parallel.dp=2 --set parallel.zero_stage=3 \
  --set parallel.offload_optimizer=nvme --set parallel.offload_params=nvme \
  --set parallel.nvme_path="$tmp/nvme"
for l in "${losses[@]:1}"; do
  close "$l" "${losses[0]}" 1e-10 || fail "the three runs evaluate to ${losses[*]}"
done
echo "checkpoint_tools_any_run: ok"
