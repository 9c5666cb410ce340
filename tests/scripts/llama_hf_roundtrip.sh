#!/usr/bin/env bash
# Hugging Face Llama files through training: a dp2 x pp2 x tp2 run trained from an
# imported directory exports files that the independent numpy reference
# (tests/reference/llama_forward.py) evaluates to trident's loss (1e-9, fp64); export ->
# convert -> export is byte-identical; a TOML that differs from config.json is named key
# by key, exit 2, nothing written.
# shellcheck source=tests/scripts/llama_common.sh
source "$(dirname "$0")/llama_common.sh"
$py "$ref" make "$tmp/f64_gqa_untied" --dtype F64 --kv-heads 2 --seed 1 || fail "make"

# Import into dp2 x pp2 x tp2, train, export; the reference reads the export.
cat >"$tmp/llama.toml" <<TOML
[model]
arch = "llama"
layers = 2
hidden = 32
heads = 4
kv_heads = 2
ffn_hidden = 40
vocab = 61
seq_len = 16
rope_theta = 500.0
norm_eps = 1e-5
tie_embeddings = false
[parallel]
dp = 2
pp = 2
tp = 2
zero_stage = 2
activation_checkpointing = "full"
[train]
micro_batch_size = 1
global_batch_size = 4
steps = 3
precision = "fp64"
log_every = 1
threads = 1
[data]
source = "synthetic"
markov_successors = 4
[checkpoint]
load = "$tmp/f64_gqa_untied"
dir = "$tmp/ck"
TOML
run 8 train "$tmp/llama.toml" >"$tmp/train.log" 2>&1 || fail "train 2x2x2 from the import: $(tail -5 "$tmp/train.log")"
run 1 export --in "$tmp/ck" --out "$tmp/exp1" --format hf >"$tmp/export.log" 2>&1 || fail "export: $(cat "$tmp/export.log")"
want=$($py "$ref" loss "$tmp/exp1" "$tmp/tokens.bin" --sequences $K --seq-len $T) || fail "reference of the export"
got=$(run 2 eval --checkpoint "$tmp/exp1" --data "$tmp/tokens.bin" --sequences $K --seq-len $T \
  --set parallel.tp=2 --set train.precision=fp64 2>&1 | loss_of) || fail "eval of the export"
close "$got" "$want" 1e-9 || fail "the export: trident $got, reference $want"
orig=$($py "$ref" loss "$tmp/f64_gqa_untied" "$tmp/tokens.bin" --sequences $K --seq-len $T)
close "$want" "$orig" 1e-6 && fail "training left the imported weights as they were ($orig)"
ck=$(run 1 eval --checkpoint "$tmp/ck" --data "$tmp/tokens.bin" --sequences $K --seq-len $T 2>&1 | loss_of)
close "$ck" "$want" 1e-9 || fail "the trained checkpoint evaluates to $ck, its export to $want"
echo "trained 2x2x2 export: trident $got reference $want"

# export -> import (convert) -> export: the same bytes.
run 1 convert --in "$tmp/exp1" --out "$tmp/ck2" >"$tmp/convert.log" 2>&1 || fail "convert of the export: $(cat "$tmp/convert.log")"
run 1 export --in "$tmp/ck2" --out "$tmp/exp2" --format hf >"$tmp/export2.log" 2>&1 || fail "export 2: $(cat "$tmp/export2.log")"
cmp -s "$tmp/exp1/model.safetensors" "$tmp/exp2/model.safetensors" || fail "model.safetensors differs after a round trip"
cmp -s "$tmp/exp1/config.json" "$tmp/exp2/config.json" || fail "config.json differs after a round trip"

# A TOML that does not match config.json: one message naming both keys, exit 2.
out=$(run 2 train "$tmp/llama.toml" --set model.kv_heads=4 --set parallel.dp=1 --set parallel.pp=1 \
  --set checkpoint.dir="$tmp/ck3" 2>&1)
[ $? -eq 2 ] || fail "a kv_heads mismatch did not exit 2: $out"
echo "$out" | grep -q "num_key_value_heads = 2 but model.kv_heads = 4; set model.kv_heads = 2" ||
  fail "mismatch message: $out"
[ ! -e "$tmp/ck3" ] || fail "a failed import wrote $tmp/ck3"
echo "OK"
