#!/usr/bin/env bash
# The checkpoint tools end to end: `trident eval` gives the same loss on 1 rank, at
# pp2 x tp2 and at pp2 with two model chunks per stage; `export` keeps the checkpoint's F64
# weights, and eval of the Hugging Face files equals the checkpoint's (1e-12);
# `convert` to pp2 x tp2 (on 3 processes) writes one file per target rank, `inspect`
# shows its layout, and training resumed from it matches training resumed from the
# original, loss for loss; usage errors exit 2.
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
common=(--set train.steps=6 --set train.log_every=1 --set train.threads=1 --set train.precision=fp64
  --set logging.run_dir=none)

run 4 train "$root/configs/tiny.toml" --set parallel.dp=2 --set parallel.tp=2 --set parallel.zero_stage=2 \
  "${common[@]}" --set train.stop_at=3 --set checkpoint.dir="$tmp/ck" >"$tmp/train.log" 2>&1 ||
  fail "train: $(cat "$tmp/train.log")"
[ "$(cat "$tmp/ck/latest")" = step_3 ] || fail "stop_at=3 did not save step 3"
python3 - "$tmp/tokens.bin" <<'PY'
import random, struct, sys
random.seed(3)
open(sys.argv[1], "wb").write(struct.pack("<2000H", *[random.randrange(256) for _ in range(2000)]))
PY

one=$(run 1 eval --checkpoint "$tmp/ck" --data "$tmp/tokens.bin" --sequences 12 2>&1) || fail "eval: $one"
l1=$(echo "$one" | loss_of)
echo "$one" | grep -q '"tokens": 384' || fail "eval tokens: $one"
four=$(run 4 eval --checkpoint "$tmp/ck" --data "$tmp/tokens.bin" --sequences 12 \
  --set parallel.pp=2 --set parallel.tp=2 2>&1) || fail "eval pp2 tp2: $four"
l4=$(echo "$four" | loss_of)
close "$l4" "$l1" 1e-12 || fail "eval at pp2 x tp2 gives $l4, on one rank $l1"
# Two model chunks per stage: the windows go round the ring twice.
two=$(run 2 eval --checkpoint "$tmp/ck" --data "$tmp/tokens.bin" --sequences 12 \
  --set parallel.pp=2 --set parallel.schedule=interleaved-1f1b --set parallel.virtual_stages=2 2>&1) ||
  fail "eval pp2 interleaved v2: $two"
l2=$(echo "$two" | loss_of)
close "$l2" "$l1" 1e-12 || fail "eval at pp2 with 2 chunks per stage gives $l2, on one rank $l1"

run 1 export --in "$tmp/ck" --out "$tmp/hf" --format hf >"$tmp/export.log" 2>&1 || fail "export: $(cat "$tmp/export.log")"
[ -f "$tmp/hf/model.safetensors" ] && [ -f "$tmp/hf/config.json" ] || fail "export wrote $(ls "$tmp/hf")"
hf=$(run 1 eval --checkpoint "$tmp/hf" --data "$tmp/tokens.bin" --sequences 12 --set train.precision=fp64 2>&1) ||
  fail "eval of the export: $hf"
grep -q '"torch_dtype": "float64"' "$tmp/hf/config.json" || fail "export config: $(cat "$tmp/hf/config.json")"
close "$(echo "$hf" | loss_of)" "$l1" 1e-12 || fail "the export evaluates to $(echo "$hf" | loss_of), the checkpoint to $l1"

run 3 convert --in "$tmp/ck" --out "$tmp/cv" --set parallel.dp=1 --set parallel.pp=2 --set parallel.tp=2 \
  --set parallel.zero_stage=1 >"$tmp/convert.log" 2>&1 || fail "convert: $(cat "$tmp/convert.log")"
for f in slices-dp0-pp0-tp0 slices-dp0-pp0-tp1 slices-dp0-pp1-tp0 slices-dp0-pp1-tp1; do
  [ -f "$tmp/cv/$f.safetensors" ] || fail "convert wrote $(ls "$tmp/cv")"
done
"$trident" inspect "$tmp/cv" --verify >"$tmp/inspect.log" 2>&1 || fail "inspect: $(cat "$tmp/inspect.log")"
grep -q "^layout: dp 1 x pp 2 x tp 2 = 4 ranks, ZeRO stage 1" "$tmp/inspect.log" || fail "inspect: $(cat "$tmp/inspect.log")"
grep -q "^step 3$" "$tmp/inspect.log" || fail "inspect step: $(cat "$tmp/inspect.log")"
grep -q "h.0.attn.qkv.weight *\[192, 64\] *F64" "$tmp/inspect.log" || fail "inspect tensors: $(cat "$tmp/inspect.log")"

resume() {  # $1: checkpoint, $2: metrics file
  run 4 train "$root/configs/tiny.toml" --set parallel.dp=1 --set parallel.pp=2 --set parallel.tp=2 \
    --set parallel.zero_stage=1 "${common[@]}" --set checkpoint.load="$1" --set logging.metrics="$2" \
    >"$2.log" 2>&1 || fail "resume from $1: $(cat "$2.log")"
}
resume "$tmp/cv" "$tmp/from_cv.jsonl"
resume "$tmp/ck" "$tmp/from_ck.jsonl"
cmp -s <(python3 -c "import json,sys; [print(repr(json.loads(l)['loss'])) for l in open(sys.argv[1])]" "$tmp/from_cv.jsonl") \
       <(python3 -c "import json,sys; [print(repr(json.loads(l)['loss'])) for l in open(sys.argv[1])]" "$tmp/from_ck.jsonl") ||
  fail "resumed from the conversion: $(cat "$tmp/from_cv.jsonl"), from the original: $(cat "$tmp/from_ck.jsonl")"
[ "$(wc -l <"$tmp/from_cv.jsonl")" -eq 3 ] || fail "expected steps 4..6: $(cat "$tmp/from_cv.jsonl")"

run 1 export --in "$tmp/ck" --out "$tmp/x" --format onnx >/dev/null 2>&1
[ $? -eq 2 ] || fail "--format onnx did not exit 2"
"$trident" inspect "$tmp/nothing" >"$tmp/none.log" 2>&1
[ $? -eq 2 ] || fail "inspect of a missing checkpoint did not exit 2"
grep -q "^trident: error: checkpoint $tmp/nothing does not exist" "$tmp/none.log" || fail "inspect message: $(cat "$tmp/none.log")"
run 1 export --in "$tmp/ck" --out "$tmp/hf" >"$tmp/again.log" 2>&1 && fail "export over a non-empty directory exited 0"
grep -q "exists and is not empty" "$tmp/again.log" || fail "export overwrite message: $(cat "$tmp/again.log")"
echo "checkpoint_tools: ok"
