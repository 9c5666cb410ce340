#!/usr/bin/env bash
# The default run through scripts/train.sh's launch path (8 ranks, dp2 x pp2 x tp2,
# ZeRO-2, 1F1B, checkpointing), for 3 steps: the metrics file, the checkpoint and the
# trace — valid JSON, and on every rank each micro-batch's forward and backward in the
# order of its stage's 1F1B schedule; and the lines README.md shows before the first step
# (the model, data, loss floor, placement and memory of rank 0) are the ones printed.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$("$root/scripts/train.sh" configs/default.toml --set train.steps=3 --set train.log_every=1 \
  --set logging.run_dir="$tmp/run" 2>&1) || fail "scripts/train.sh exited non-zero: $out"
echo "$out" | grep -q "^step 3/3 | loss" || fail "no progress line: $out"
echo "$out" | grep -q "run directory: $tmp/run" || fail "the summary does not name the run directory"
# README's block of the default run: the lines that do not depend on the machine or the time.
readme=$(awk '/trident-check: none: a run of minutes; tests\/scripts\/default_run.sh/ { f = 1; next }
  f && /^```/ { if (++fences == 2) exit; next } f' "$root/README.md" | grep -E '^(trident: |data: |loss floor|placement: |memory per rank|  rank 0 )')
[ "$(echo "$readme" | wc -l)" -eq 6 ] || fail "README.md's default-run block not found: $readme"
while IFS= read -r line; do
  echo "$out" | grep -qxF -- "$line" || fail "README.md shows a line the default run does not print:
$line"
done <<<"$readme"
[ -f "$tmp/run/checkpoints/step_3/index.json" ] || fail "no checkpoint step_3: $(ls -R "$tmp/run")"
grep -q "step_3" "$tmp/run/checkpoints/latest" || fail "latest does not point to step_3"
python3 - "$tmp/run" <<'PY' || fail "metrics or trace"
import json, sys
run = sys.argv[1]
rows = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
assert [r["step"] for r in rows] == [1, 2, 3], rows
info = json.load(open(f"{run}/run.json"))
assert info["loss_floor"] > 0 and info["dp"] == 2 and info["pp"] == 2 and info["tp"] == 2
trace = json.load(open(f"{run}/trace.json"))
events = trace["traceEvents"]
stage_of = {e["pid"]: int(e["args"]["name"].split("pp ")[1].split()[0])
            for e in events if e.get("name") == "process_name"}
assert sorted(stage_of) == list(range(8)), stage_of

def one_f_one_b(p, s, m):
    # warm-up forwards, steady one forward one backward, cool-down backwards
    warm = min(p - s - 1, m)
    order = [("forward", k) for k in range(warm)]
    f, b = warm, 0
    while b < m:
        if f < m:
            order.append(("forward", f)); f += 1
        order.append(("backward", b)); b += 1
    return order

m = 4  # global batch 16 / (micro-batch 2 x dp 2)
for rank, stage in stage_of.items():
    for step in (1, 2, 3):
        got = [(e["cat"], e["args"]["micro_batch"])
               for e in sorted((e for e in events if e.get("ph") == "X" and e["pid"] == rank
                                and e["args"]["step"] == step), key=lambda e: e["ts"])
               if e["cat"] in ("forward", "backward")]
        want = one_f_one_b(2, stage, m)
        assert got == want, (rank, step, got, want)
        names = [e["name"] for e in events if e.get("ph") == "X" and e["pid"] == rank
                 and e["args"]["step"] == step and e["cat"] == "backward"]
        assert all(n.startswith("recompute+backward") for n in names), names
PY
echo "default_run: ok"
