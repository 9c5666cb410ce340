#!/usr/bin/env bash
# A WSD run saved in its stable phase and resumed with a longer train.steps is the run
# started with the longer train.steps: 30 steps stopped after step 10, resumed to 40, give
# the uninterrupted 40-step run's loss, lr and gradient norm at every step, bitwise (fp64).
# The resumed run's header names both schedules.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train() {  # metrics file, then --set arguments
  local metrics=$1; shift
  "$trident" train "$root/configs/tiny.toml" --set train.precision=fp64 --set model.layers=2 \
    --set model.hidden=32 --set train.micro_batch_size=4 --set train.global_batch_size=8 \
    --set train.log_every=1 --set train.threads=1 --set optimizer.warmup_steps=5 \
    --set optimizer.schedule=wsd --set optimizer.decay_shape=1-sqrt \
    --set logging.run_dir=none --set logging.metrics="$metrics" "$@" 2>&1
}
out=$(train "$tmp/full.jsonl" --set train.steps=40) || fail "the 40-step run: $out"
out=$(train "$tmp/resumed.jsonl" --set train.steps=30 --set train.stop_at=10 \
  --set checkpoint.dir="$tmp/ckpt") || fail "the 30-step run stopped at 10: $out"
[ -d "$tmp/ckpt/step_10" ] || fail "no checkpoint of step 10: $out"
out=$(train "$tmp/resumed.jsonl" --set train.steps=40 --set checkpoint.dir="$tmp/ckpt" \
  --set checkpoint.load=auto) || fail "the resumed run: $out"
echo "$out" | grep -q "^lr schedule: the checkpoint was saved on wsd over train.steps = 30 (decay after step 24); this run follows wsd over train.steps = 40 (decay after step 32): step 11 trains at lr 0.003 " ||
  fail "the resumed run does not name the change of schedule: $out"
python3 - "$tmp/full.jsonl" "$tmp/resumed.jsonl" <<'PY' || fail "the resumed run differs"
import json, sys
full, resumed = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert [r["step"] for r in full] == list(range(1, 41)), [r["step"] for r in full]
assert [r["step"] for r in resumed] == list(range(1, 41)), [r["step"] for r in resumed]
for a, b in zip(full, resumed):
    for k in ("loss", "lr", "grad_norm"):
        assert a[k] == b[k], (a["step"], k, a[k], b[k])
# The schedule itself: warm-up, lr through step 32, then 1-sqrt down to min_lr.
lr = [r["lr"] for r in full]
assert lr[4] == lr[31] == 3e-3 and lr[0] == 3e-3 / 5, lr
assert abs(lr[39] - 3e-4) < 1e-15 and abs(lr[35] - (3e-4 + 2.7e-3 * (1 - 0.5 ** 0.5))) < 1e-15, lr
print(f"40 steps: loss {full[0]['loss']:.6f} -> {full[-1]['loss']:.6f}; resumed after 10 on "
      f"the stretched schedule, every step equal")
PY
echo "lr_schedule_resume: ok"
