#!/usr/bin/env bash
# The run directory: the default run (configs/default.toml, 8 ranks, 3 steps) started from a
# fresh directory writes runs/default with metrics.jsonl, trace.json, run.json (its layout's
# dp, cp, ep, pp and tp read back) and a checkpoint, and scripts/plot.py draws from it; a
# second fresh run into it stops with exit code 2 and changes nothing; checkpoint.load =
# "auto" resumes it (metrics hold each step once). Then divergence: optimizer.lr = 1e4
# skips the non-finite steps (logged with "skipped": true), stops after
# train.max_skipped_steps with exit code 1 and a message naming the steps, and the newest
# checkpoint loads and evaluates to a finite loss.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
train() { mpirun -np 8 --oversubscribe --bind-to none "$trident" train "$root/configs/default.toml" "$@"; }

train --set train.steps=3 --set train.log_every=1 >first.log 2>&1 || fail "default run: $(tail -5 first.log)"
for f in metrics.jsonl trace.json run.json checkpoints/latest checkpoints/step_3/index.json; do
  [ -s "runs/default/$f" ] || fail "runs/default/$f is missing: $(ls -R runs)"
done
python3 - runs/default/run.json <<'PY' || fail "run.json's layout: $(cat runs/default/run.json)"
import json, sys
info = json.load(open(sys.argv[1]))
layout = {k: info[k] for k in ("dp", "cp", "ep", "pp", "tp")}
assert layout == {"dp": 2, "cp": 1, "ep": 1, "pp": 2, "tp": 2}, layout
assert info["dp"] * info["cp"] * info["pp"] * info["tp"] == 8, layout
PY
"$root/scripts/plot.py" runs/default >plot.log 2>&1 || fail "plot.py: $(cat plot.log)"
for f in loss.png throughput.png timeline.png; do
  [ -s "runs/default/$f" ] || fail "plot.py did not draw $f: $(cat plot.log)"
done

cp runs/default/metrics.jsonl before.jsonl
train --set train.steps=3 >again.log 2>&1
code=$?
[ $code -eq 2 ] || fail "a fresh run into a used run directory exited $code, not 2: $(tail -3 again.log)"
grep -q "runs/default already holds a run.*checkpoint.load=auto" again.log ||
  fail "no message naming the run directory and the fix: $(cat again.log)"
cmp -s before.jsonl runs/default/metrics.jsonl || fail "the refused run changed metrics.jsonl"

train --set train.steps=5 --set train.log_every=1 --set checkpoint.load=auto >auto.log 2>&1 ||
  fail "auto resume: $(tail -5 auto.log)"
grep -q "resumed from runs/default/checkpoints/step_3 after step 3" auto.log || fail "auto did not resume step 3"
python3 - runs/default/metrics.jsonl <<'PY' || fail "resumed metrics"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [1, 2, 3, 4, 5], rows
assert all(r["skipped"] is False for r in rows)
PY

# Divergence, on its own run directory with a save every step; without the spike guard
# (tests/scripts/spike_guard.sh), so that the non-finite steps run into max_skipped_steps.
train --set train.steps=30 --set train.log_every=1 --set optimizer.lr=1e4 --set guard.enabled=false \
  --set checkpoint.save_every=1 --set checkpoint.keep_last=2 --set train.max_skipped_steps=4 \
  --set logging.run_dir=diverge >diverge.log 2>&1
code=$?
[ $code -eq 1 ] || fail "a diverged run exited $code, not 1: $(tail -3 diverge.log)"
grep -q "training diverged: steps [0-9]* to [0-9]* were skipped (the last for a non-finite loss or gradient norm.*train.max_skipped_steps = 4.*optimizer.lr" diverge.log ||
  fail "no divergence message: $(grep -v '^step' diverge.log | tail -5)"
python3 - diverge/metrics.jsonl <<'PY' || fail "skipped steps in the metrics"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
skipped = [r["step"] for r in rows if r["skipped"]]
assert len(skipped) == 4 and skipped == list(range(skipped[0], skipped[0] + 4)), skipped
assert skipped[-1] == rows[-1]["step"], "the job did not stop at the fourth skip"
for r in rows:  # JSON has no NaN: a non-finite number is written as null
    finite = all(r[k] is not None and math.isfinite(r[k]) for k in ("loss", "grad_norm"))
    assert r["skipped"] == (not finite), r
print("skipped steps", skipped)
PY
python3 - tokens.bin <<'PY'
import random, struct, sys
random.seed(5)
open(sys.argv[1], "wb").write(struct.pack("<4000H", *[random.randrange(256) for _ in range(4000)]))
PY
out=$(mpirun -np 1 "$trident" eval --checkpoint diverge/checkpoints --data tokens.bin --sequences 8 2>&1) ||
  fail "eval of the newest checkpoint after divergence: $out"
echo "$out" | python3 -c "
import json, math, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
assert math.isfinite(r['loss']), r
print('newest checkpoint after divergence: loss', r['loss'])" || fail "eval loss not finite: $out"
echo "run_dir: ok"
