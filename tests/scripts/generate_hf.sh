#!/usr/bin/env bash
# `trident generate` on Hugging Face files against independent numpy decoders written from
# HF's math (tests/reference/gpt2_forward.py, llama_forward.py): greedy tokens of random
# GPT-2, Llama (GQA) and Mixtral files, float64, equal the reference's, GPT-2 and Llama also
# at tp 2 on two ranks (vocab-parallel logits gathered) and GPT-2 without the KV cache; a
# sampled run is the same at tp 1 and tp 2.
# shellcheck source=tests/scripts/llama_common.sh
source "$(dirname "$0")/llama_common.sh"
gpt2_ref="$root/tests/reference/gpt2_forward.py"
prompt=3,1,4,1,5 N=20

tokens_of() {  # the "tokens" list of generate's JSON line, as JSON
  $py -c "import json,sys; print(json.dumps(json.loads(sys.stdin.read().strip().splitlines()[-1])['tokens']))"
}
generate() {  # ranks, directory, then more arguments
  local np=$1 dir=$2; shift 2
  run "$np" generate --checkpoint "$dir" --prompt-tokens $prompt --tokens $N --json \
    --set train.precision=fp64 --set parallel.tp="$np" "$@" 2>/dev/null | tokens_of
}
check_greedy() {  # name, directory, reference script, then the tp sizes to run
  local name=$1 dir=$2 script=$3 want got np
  shift 3
  want=$($py "$script" greedy "$dir" --prompt-tokens $prompt --tokens $N) || fail "reference $name"
  for np in "$@"; do
    got=$(generate "$np" "$dir") || fail "generate $name at tp $np"
    [ "$got" = "$want" ] || fail "$name at tp $np: trident $got, reference $want"
  done
  echo "$name: $want at tp $*"
}

$py "$gpt2_ref" make "$tmp/gpt2" --seed 2 || fail "make gpt2"
$py "$ref" make "$tmp/llama" --dtype F64 --kv-heads 2 --seed 1 || fail "make llama"
$py "$ref" make "$tmp/mixtral" --dtype F64 --kv-heads 2 --experts 4 --top-k 2 --seed 3 || fail "make mixtral"
check_greedy gpt2 "$tmp/gpt2" "$gpt2_ref" 1 2
check_greedy llama_gqa "$tmp/llama" "$ref" 1 2
check_greedy mixtral "$tmp/mixtral" "$ref" 1
# Recomputing the whole sequence for every token (test_generate.cpp compares the logits).
got=$(generate 1 "$tmp/gpt2" --no-kv-cache) || fail "generate without the KV cache"
[ "$got" = "$($py "$gpt2_ref" greedy "$tmp/gpt2" --prompt-tokens $prompt --tokens $N)" ] ||
  fail "gpt2 without the KV cache: $got"

# Sampled: the draw of position i is a function of (seed, i), and the logits are the same at
# tp 2, so the tokens are too; another seed draws others.
sample=(--temperature 1.0 --top-k 20 --top-p 0.95 --seed 7)
one=$(generate 1 "$tmp/llama" "${sample[@]}") || fail "sampled at tp 1"
two=$(generate 2 "$tmp/llama" "${sample[@]}") || fail "sampled at tp 2"
[ "$one" = "$two" ] || fail "sampled tokens differ: tp 1 $one, tp 2 $two"
other=$(generate 1 "$tmp/llama" --temperature 1.0 --top-k 20 --top-p 0.95 --seed 8) || fail "seed 8"
[ "$one" != "$other" ] || fail "seeds 7 and 8 drew the same tokens $one"
echo "sampled (seed 7): $one at tp 1 and 2"

# Text in, text out with the byte tokenizer; a prompt longer than the positions is refused.
out=$(run 1 generate --checkpoint "$tmp/llama" --prompt "$(printf '\x03\x01\x04\x01\x05')" \
  --tokens $N --json --set train.precision=fp64 2>/dev/null | tokens_of) || fail "--prompt"
[ "$out" = "$($py "$ref" greedy "$tmp/llama" --prompt-tokens $prompt --tokens $N)" ] ||
  fail "--prompt of the same bytes gave $out"
err=$(run 1 generate --checkpoint "$tmp/gpt2" --prompt-tokens $prompt --tokens 40 2>&1) &&
  fail "45 positions of a 32-position model were accepted"
echo "$err" | grep -q "make 45 positions, more than the model's 32 (model.seq_len)" ||
  fail "the message for too many positions: $err"
echo "generate_hf: ok"
