#!/usr/bin/env bash
# Hugging Face Mixtral files: `trident eval` of a random Mixtral directory (4 experts, top 2,
# grouped-query attention, fp64) matches the independent numpy reference
# (tests/reference/llama_forward.py, from MixtralSparseMoeBlock's formulas) to 1e-9 on one
# rank, at tp 2 and with the experts over 2 ranks (ep 2, alone and with tp 2); import -> export keeps the reference's loss, and export -> convert ->
# export is byte-identical; a config whose MoE keys differ from config.json is named key by
# key.
# shellcheck source=tests/scripts/llama_common.sh
source "$(dirname "$0")/llama_common.sh"
$py "$ref" make "$tmp/mix" --dtype F64 --kv-heads 2 --experts 4 --top-k 2 --seed 3 || fail "make"
want=$($py "$ref" loss "$tmp/mix" "$tmp/tokens.bin" --sequences $K --seq-len $T) || fail "reference"
for tp in 1 2; do
  got=$(run $tp eval --checkpoint "$tmp/mix" --data "$tmp/tokens.bin" --sequences $K --seq-len $T \
    --set parallel.tp=$tp --set train.precision=fp64 2>&1 | loss_of) || fail "eval at tp $tp"
  close "$got" "$want" 1e-9 || fail "eval at tp $tp: trident $got, reference $want"
  echo "Mixtral eval at tp $tp: trident $got reference $want"
done
# Expert parallelism: the experts shared out over 2 ranks; 5 windows leave dp rank 1 a
# micro-batch short, which it pads (the all-to-alls need both ranks in every MoE layer).
want5=$($py "$ref" loss "$tmp/mix" "$tmp/tokens.bin" --sequences 5 --seq-len $T) || fail "reference, 5 windows"
for layout in "2 parallel.ep=2" "4 parallel.ep=2 parallel.tp=2"; do
  read -r np sets <<<"$layout"
  args=()
  for s in $sets; do args+=(--set "$s"); done
  got=$(run "$np" eval --checkpoint "$tmp/mix" --data "$tmp/tokens.bin" --sequences 5 --seq-len $T \
    --micro-batch 2 "${args[@]}" --set train.precision=fp64 2>&1 | loss_of) || fail "eval at $sets"
  close "$got" "$want5" 1e-9 || fail "eval at $sets: trident $got, reference $want5"
  echo "Mixtral eval at $sets: trident $got reference $want5"
done

# import (convert) -> export: the reference reads the same function; export -> convert ->
# export: the same bytes.
run 1 convert --in "$tmp/mix" --out "$tmp/ck1" >"$tmp/c1.log" 2>&1 || fail "convert: $(cat "$tmp/c1.log")"
run 1 export --in "$tmp/ck1" --out "$tmp/exp1" --format hf >"$tmp/e1.log" 2>&1 || fail "export: $(cat "$tmp/e1.log")"
grep -q '"model_type": "mixtral"' "$tmp/exp1/config.json" || fail "the export is not a Mixtral: $(cat "$tmp/exp1/config.json")"
again=$($py "$ref" loss "$tmp/exp1" "$tmp/tokens.bin" --sequences $K --seq-len $T) || fail "reference of the export"
close "$again" "$want" 1e-12 || fail "the export computes $again, the original $want"
run 1 convert --in "$tmp/exp1" --out "$tmp/ck2" >"$tmp/c2.log" 2>&1 || fail "convert 2: $(cat "$tmp/c2.log")"
run 1 export --in "$tmp/ck2" --out "$tmp/exp2" --format hf >"$tmp/e2.log" 2>&1 || fail "export 2: $(cat "$tmp/e2.log")"
cmp -s "$tmp/exp1/model.safetensors" "$tmp/exp2/model.safetensors" || fail "model.safetensors differs after a round trip"
cmp -s "$tmp/exp1/config.json" "$tmp/exp2/config.json" || fail "config.json differs after a round trip"
echo "export -> convert -> export: byte-identical"

# A config whose top k differs from num_experts_per_tok: named, exit 2.
out=$(run 1 eval --checkpoint "$tmp/mix" --data "$tmp/tokens.bin" --sequences $K --seq-len $T \
  --set model.moe_top_k=1 2>&1)
[ $? -eq 2 ] || fail "a top-k mismatch did not exit 2: $out"
echo "$out" | grep -q "num_experts_per_tok = 2 but model.moe_top_k = 1; set model.moe_top_k = 2" ||
  fail "mismatch message: $out"
# A router other than the file's (Mixtral routes by softmax): named, exit 2.
out=$(run 1 eval --checkpoint "$tmp/mix" --data "$tmp/tokens.bin" --sequences $K --seq-len $T \
  --set model.moe_router=sigmoid 2>&1)
[ $? -eq 2 ] || fail "a router mismatch did not exit 2: $out"
echo "$out" | grep -q '(a softmax router) = "softmax" but model.moe_router = "sigmoid"; set model.moe_router = "softmax"' ||
  fail "router mismatch message: $out"
echo "OK"
