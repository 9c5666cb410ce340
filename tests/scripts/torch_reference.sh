#!/usr/bin/env bash
# trident's training against an independent PyTorch loop (tests/reference/gpt_train.py,
# Debian's python3-torch): the tiny GPT in fp64 on one rank, saved at step 0
# (checkpoint.save_initial) and exported as Hugging Face files, trains 20 steps with
# warm-up, cosine decay, clipping, weight decay and the end-of-document mask; the
# reference, started from the export and fed the same sequences, gives each step's loss
# and gradient norm to 1e-9. Clipping acts on some steps and not on others.
set -u
trident=$1 root=$2
py=/usr/bin/python3  # Debian's python3 with python3-torch
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$py -c "import torch" 2>/dev/null || fail "python3-torch is missing (scripts/setup.sh installs it)"
run() { mpirun -np 1 --oversubscribe --bind-to none "$trident" "$@"; }

# One window of the GNU GPL's text, bytes as tokens, with newlines (10) in it: every
# sequence of every step is this window.
$py - "$tmp/window.bin" <<'PY'
import struct, sys
text = open("/usr/share/common-licenses/GPL-3", "rb").read()[1000:1033]
assert len(text) == 33 and text.count(b"\n") >= 1, text
open(sys.argv[1], "wb").write(struct.pack("<33H", *text))
PY

steps=20 warmup=5 lr=3e-3 min_lr=3e-4 clip=3.0 eod=10
config=("$root/configs/tiny.toml" --set train.precision=fp64 --set "train.steps=$steps"
  --set train.threads=1 --set "optimizer.lr=$lr" --set "optimizer.min_lr=$min_lr"
  --set "optimizer.warmup_steps=$warmup" --set "optimizer.grad_clip=$clip"
  --set data.source="$tmp/window.bin" --set "data.eod_token=$eod")
run train "${config[@]}" --set train.log_every=1 --set logging.metrics="$tmp/metrics.jsonl" \
  --set logging.run_dir=none --set checkpoint.dir="$tmp/ck" --set checkpoint.save_initial=true \
  >"$tmp/train.log" 2>&1 || fail "train: $(cat "$tmp/train.log")"
grep -q "^saved $tmp/ck/step_0 " "$tmp/train.log" || fail "no step_0 save: $(cat "$tmp/train.log")"
run export --in "$tmp/ck/step_0" --out "$tmp/hf" --format hf >"$tmp/export.log" 2>&1 ||
  fail "export: $(cat "$tmp/export.log")"

# Each step's sequences: the global batch of 32, every one the window.
$py - "$tmp/window.bin" "$tmp/batches.jsonl" $steps <<'PY'
import json, struct, sys
window = list(struct.unpack("<33H", open(sys.argv[1], "rb").read()))
with open(sys.argv[2], "w") as out:
    for step in range(1, int(sys.argv[3]) + 1):
        out.write(json.dumps({"step": step, "sequences": [{"tokens": window}] * 32}) + "\n")
PY

# One thread: the suite gives this test one core.
OMP_NUM_THREADS=1 $py "$root/tests/reference/gpt_train.py" "$tmp/hf" "$tmp/batches.jsonl" --steps $steps \
  --total-steps $steps --lr $lr --min-lr $min_lr --warmup $warmup --grad-clip $clip --eod $eod \
  >"$tmp/reference.jsonl" 2>"$tmp/reference.log" || fail "reference: $(cat "$tmp/reference.log")"

$py - "$tmp/metrics.jsonl" "$tmp/reference.jsonl" $steps $clip <<'PY' || fail "trident and the reference differ"
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
ref = [json.loads(l) for l in open(sys.argv[2])]
steps, clip = int(sys.argv[3]), float(sys.argv[4])
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
print("%d steps: loss %.6f -> %.6f, clipped %d; largest relative difference: loss %.2e, "
      "grad_norm %.2e, lr %.2e" % (steps, ref[0]["loss"], ref[-1]["loss"], clipped,
                                   worst["loss"], worst["grad_norm"], worst["lr"]))
PY
echo "OK"
