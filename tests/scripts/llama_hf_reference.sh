#!/usr/bin/env bash
# Hugging Face Llama files against an independent numpy forward written from HF's math
# (tests/reference/llama_forward.py): `trident eval` at tp 1 and tp 2 of random GQA files,
# untied and tied, single-file and sharded, equals it to 1e-9 (F64 files, fp64) and 1e-5
# (F32 and BF16 files, fp32); the reference with Meta's interleaved RoPE does not (the test
# tells the two orders apart).
# shellcheck source=tests/scripts/llama_common.sh
source "$(dirname "$0")/llama_common.sh"

check_files() {  # name, make-args, precision, tolerance
  local name=$1 args=$2 precision=$3 tol=$4 want got
  # shellcheck disable=SC2086
  $py "$ref" make "$tmp/$name" $args || fail "make $name"
  want=$($py "$ref" loss "$tmp/$name" "$tmp/tokens.bin" --sequences $K --seq-len $T) || fail "reference $name"
  for tp in 1 2; do
    got=$(run "$tp" eval --checkpoint "$tmp/$name" --data "$tmp/tokens.bin" --sequences $K --seq-len $T \
      --set parallel.tp=$tp --set train.precision="$precision" 2>&1) || fail "eval $name tp$tp: $got"
    got=$(echo "$got" | loss_of)
    close "$got" "$want" "$tol" || fail "$name at tp $tp: trident $got, reference $want (tolerance $tol)"
    echo "$name tp$tp: trident $got reference $want"
  done
}
check_files f64_gqa_untied "--dtype F64 --kv-heads 2 --seed 1" fp64 1e-9
check_files f64_mqa_tied_sharded "--dtype F64 --kv-heads 1 --tied --sharded --seed 2" fp64 1e-9
check_files f32_gqa_untied "--dtype F32 --kv-heads 2 --seed 3" fp32 1e-5
check_files bf16_gqa_tied "--dtype BF16 --kv-heads 2 --tied --seed 4" fp32 1e-5

# The comparison is sensitive to RoPE's order: Meta's interleaved pairs give another loss.
hf=$($py "$ref" loss "$tmp/f64_gqa_untied" "$tmp/tokens.bin" --sequences $K --seq-len $T)
meta=$($py "$ref" loss "$tmp/f64_gqa_untied" "$tmp/tokens.bin" --sequences $K --seq-len $T --rope interleaved)
close "$meta" "$hf" 1e-6 && fail "interleaved RoPE gives the same loss ($meta) as HF's ($hf)"

echo "OK"
