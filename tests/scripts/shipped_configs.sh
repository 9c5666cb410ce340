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
train tiny tiny.toml --set train.stop_at=40
train moe-tiny moe-tiny.toml --set train.stop_at=40
echo "shipped_configs: ok"
