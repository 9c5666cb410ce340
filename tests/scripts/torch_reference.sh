#!/usr/bin/env bash
# trident's training against an independent PyTorch loop (tests/reference/gpt_train.py,
# Debian's python3-torch): the tiny GPT in fp64 on one rank, on the GNU GPL's text (bytes
# as tokens, read in epochs), saved at step 0 (checkpoint.save_initial) and exported as
# Hugging Face files, trains 20 steps with warm-up, cosine decay, clipping, weight decay
# and the end-of-document mask, with AdamW and again with Muon (optimizer.name = "muon");
# the reference, started from the export and fed the sequences `trident batch --json`
# names, gives each step's loss and gradient norm to 1e-9. The named sequences are checked against the text itself: each is the window at
# its offset, and no window comes twice within the epoch. Clipping acts on some steps and
# not on others.
set -u
trident=$1 root=$2
py=/usr/bin/python3  # Debian's python3 with python3-torch
text=/usr/share/common-licenses/GPL-3  # Debian's base-files
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$py -c "import torch" 2>/dev/null || fail "python3-torch is missing (scripts/setup.sh installs it)"
run() { mpirun -np 1 --oversubscribe --bind-to none "$trident" "$@"; }

"$trident" prepare-data --in "$text" --out "$tmp/gpl.bin" --tokenizer byte >"$tmp/prepare.log" 2>&1 ||
  fail "prepare-data: $(cat "$tmp/prepare.log")"

steps=20 warmup=5 lr=3e-3 min_lr=3e-4 clip=1.5 eod=10
config=("$root/configs/tiny.toml" --set train.precision=fp64 --set "train.steps=$steps"
  --set train.threads=1 --set "optimizer.lr=$lr" --set "optimizer.min_lr=$min_lr"
  --set "optimizer.warmup_steps=$warmup" --set "optimizer.grad_clip=$clip"
  --set data.source="$tmp/gpl.bin" --set "data.eod_token=$eod")
run train "${config[@]}" --set train.log_every=1 --set logging.metrics="$tmp/metrics.jsonl" \
  --set logging.run_dir=none --set checkpoint.dir="$tmp/ck" --set checkpoint.save_initial=true \
  >"$tmp/train.log" 2>&1 || fail "train: $(cat "$tmp/train.log")"
run train "${config[@]}" --set optimizer.name=muon --set train.log_every=1 \
  --set logging.metrics="$tmp/muon.jsonl" --set logging.run_dir=none --set checkpoint.dir= \
  >"$tmp/muon.log" 2>&1 || fail "train with Muon: $(cat "$tmp/muon.log")"
grep -q "^saved $tmp/ck/step_0 " "$tmp/train.log" || fail "no step_0 save: $(cat "$tmp/train.log")"
run export --in "$tmp/ck/step_0" --out "$tmp/hf" --format hf >"$tmp/export.log" 2>&1 ||
  fail "export: $(cat "$tmp/export.log")"

# Each step's sequences, as trident names them; they must be the text's own windows.
for ((step = 1; step <= steps; step++)); do
  "$trident" batch "${config[@]}" --step $step --json >>"$tmp/batches.jsonl" 2>"$tmp/batch.log" ||
    fail "batch --step $step: $(cat "$tmp/batch.log")"
done
$py - "$text" "$tmp/batches.jsonl" $steps <<'PY' || fail "trident batch names other sequences"
import json, sys
text = open(sys.argv[1], "rb").read()
batches = [json.loads(l) for l in open(sys.argv[2])]
T, windows = 32, (len(text) - 1) // 32
assert [b["step"] for b in batches] == list(range(1, int(sys.argv[3]) + 1))
seen = []
for b in batches:
    assert len(b["sequences"]) == 32, len(b["sequences"])
    for s in b["sequences"]:
        assert s["epoch"] == 0 and 0 <= s["window"] < windows and s["offset"] == s["window"] * T, s
        assert s["tokens"] == list(text[s["offset"]:s["offset"] + T + 1]), s
        seen.append(s["window"])
assert len(set(seen)) == len(seen), "a window came twice within the first epoch"
# Newlines (the end-of-document token here) are among the inputs: the mask has work.
assert sum(10 in s["tokens"][:T] for b in batches for s in b["sequences"]) > 100
PY

# One thread: the suite gives this test one core.
for optimizer in adamw muon; do
  OMP_NUM_THREADS=1 $py "$root/tests/reference/gpt_train.py" "$tmp/hf" "$tmp/batches.jsonl" \
    --steps $steps --total-steps $steps --lr $lr --min-lr $min_lr --warmup $warmup \
    --grad-clip $clip --eod $eod --optimizer $optimizer >"$tmp/reference.$optimizer.jsonl" \
    2>"$tmp/reference.log" || fail "reference ($optimizer): $(cat "$tmp/reference.log")"
done

compare() {
  $py - "$1" "$2" $steps $clip "$3" <<'PY' || fail "trident and the reference differ ($3)"
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
ref = [json.loads(l) for l in open(sys.argv[2])]
steps, clip, optimizer = int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
assert [r["step"] for r in ours] == list(range(1, steps + 1)), [r["step"] for r in ours]
assert [r["step"] for r in ref] == list(range(1, steps + 1)), [r["step"] for r in ref]
assert not any(r.get("skipped") for r in ours), "the guard skipped a step"
worst = {"loss": 0.0, "grad_norm": 0.0, "lr": 0.0}
for a, b in zip(ours, ref):
    for key in worst:
        rel = abs(a[key] - b[key]) / abs(b[key])
        worst[key] = max(worst[key], rel)
        assert rel <= 1e-9, "step %d %s: trident %r, reference %r (relative %.2e)" % (
            a["step"], key, a[key], b[key], rel)
# Both sides of the clipping threshold are exercised, and training moved the loss.
clipped = sum(r["grad_norm"] > clip for r in ref)
assert 0 < clipped < steps, "clipping acted on %d of %d steps" % (clipped, steps)
assert ref[-1]["loss"] < ref[0]["loss"] - 0.5, (ref[0]["loss"], ref[-1]["loss"])
print("%s, %d steps: loss %.6f -> %.6f, clipped %d; largest relative difference: loss %.2e, "
      "grad_norm %.2e, lr %.2e" % (optimizer, steps, ref[0]["loss"], ref[-1]["loss"], clipped,
                                   worst["loss"], worst["grad_norm"], worst["lr"]))
PY
}
compare "$tmp/metrics.jsonl" "$tmp/reference.adamw.jsonl" adamw
compare "$tmp/muon.jsonl" "$tmp/reference.muon.jsonl" muon
# The two optimizers trained differently: Muon is not AdamW under another name.
$py - "$tmp/metrics.jsonl" "$tmp/muon.jsonl" <<'PY' || fail "Muon's run is AdamW's"
import json, sys
adamw, muon = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:3])
assert abs(adamw[-1] - muon[-1]) > 1e-3 * abs(adamw[-1]), (adamw[-1], muon[-1])
PY
echo "OK"
