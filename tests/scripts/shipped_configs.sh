#!/usr/bin/env bash
# Every config in configs/ trains to its end with the default spike guard on, none of its
# steps skipped: the real-text walk-through of docs/real-data.md (prepare-data on the sample
# stories, then configs/text.toml), the real-text recipe (scripts/prepare-text-mix.sh, then
# configs/text-mix.toml with its validation and samples), and the synthetic configs. Short
# runs: train.stop_at keeps each config's own schedule (warm-up, decay) and stops early. The
# three large shapes (gpt2-124m, smollm-135m, mixtral-small) take a minute or more per step
# on this machine: tests/config/test_config_files.cpp validates every config for its world
# size, and default_learns.sh trains
# configs/default.toml to its end.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

train() {  # train NAME CONFIG [--set ...]: one rank, the run's files in $tmp/NAME
  local name=$1 config=$2
  shift 2
  mpirun -np 1 --oversubscribe --bind-to none "$trident" train "$root/configs/$config" \
    --set parallel.dp=1 --set parallel.pp=1 --set parallel.tp=1 --set parallel.ep=1 \
    --set train.log_every=1 --set logging.run_dir="$tmp/$name" "$@" >"$name.log" 2>&1 ||
    fail "$config ($name) did not train to its end: $(tail -5 "$name.log")"
  python3 - "$tmp/$name/metrics.jsonl" "$name" <<'PY' || fail "$config ($name): $(tail -3 "$name.log")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
skipped = [r["step"] for r in rows if r["skipped"]]
assert not skipped, f"steps {skipped} were skipped"
print(f"{sys.argv[2]}: {len(rows)} steps, loss {rows[0]['loss']:.3f} -> {rows[-1]['loss']:.3f}, none skipped")
PY
}

# docs/real-data.md, as a new user follows it: the sample stories, one token per byte.
"$trident" prepare-data --in "$root/data/sample/stories.txt" --out stories.bin --tokenizer byte \
  >/dev/null 2>&1 || fail "prepare-data on the sample stories"
train text text.toml --set data.source="$tmp/stories.bin" --set train.stop_at=60
# The real-text recipe: two Debian corpora mixed by weight, validated and sampled every 20
# steps here (its own schedule: WSD over 600 steps).
OUT="$tmp/text-mix" "$root/scripts/prepare-text-mix.sh" >prepare.log 2>&1 ||
  fail "scripts/prepare-text-mix.sh: $(tail -5 prepare.log)"
train text-mix text-mix.toml --set train.stop_at=40 --set eval.every=20 --set eval.sequences=16 \
  --set 'data.mix=[{name = "fortunes", path = "'"$tmp"'/text-mix/fortunes.bin", weight = 0.6}, {name = "reference", path = "'"$tmp"'/text-mix/reference.bin", weight = 0.4}]'
python3 - "$tmp/text-mix" <<'PY' || fail "text-mix: $(tail -5 text-mix.log)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
evals = [r for r in rows if "val_loss" in r]
assert [r["step"] for r in evals] == [20, 40], [r["step"] for r in evals]
for r in evals:
    assert set(r["val_loss_by_source"]) == {"fortunes", "reference"}, r
assert evals[1]["val_loss"] < evals[0]["val_loss"], evals
share = sum(r["tokens_by_source"]["fortunes"] for r in rows) / sum(sum(r["tokens_by_source"].values()) for r in rows)
assert abs(share - 0.6) < 0.01, share
samples = open(sys.argv[1] + "/samples.txt").read().splitlines()
assert len(samples) == 2 and samples[0].startswith("step 20: \"The "), samples
print(f"text-mix: val_loss {evals[0]['val_loss']:.3f} -> {evals[1]['val_loss']:.3f}, fortunes share {share:.3f}")
PY
train tiny tiny.toml --set train.stop_at=40
train moe-tiny moe-tiny.toml --set train.stop_at=40
echo "shipped_configs: ok"
