#!/usr/bin/env bash
# `trident train` on 2 ranks (tp 2) writes one JSON object per logged step with the
# documented fields, and rank 0 prints progress lines without control characters; and the
# Mixture-of-Experts config configs/moe-tiny.toml trains at tp 2.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
  --set parallel.tp=2 --set train.steps=6 --set train.log_every=2 \
  --set logging.metrics="$tmp/metrics.jsonl" --set logging.run_dir=none 2>&1) || fail "train exited non-zero: $out"
echo "$out" | grep -q "^step 6/6 | loss" || fail "no progress line for step 6: $out"
if printf '%s' "$out" | grep -q $'\x1b'; then fail "control characters in plain output"; fi
python3 - "$tmp/metrics.jsonl" <<'PY' || fail "metrics file"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [2, 4, 6], rows
for r in rows:
    for k in ("loss", "lr", "grad_norm", "tokens_per_s", "step_time_s", "tflops"):
        assert isinstance(r[k], (int, float)) and r[k] == r[k], (k, r)
    assert 0 < r["loss"] < 10 and r["tokens_per_s"] > 0
    # The tensors' peak is part of the resident set's, and the model's weights alone are in it.
    assert 0 < r["peak_tensor_bytes"] < r["peak_rss_bytes"], r
# Peaks never fall.
for a, b in zip(rows, rows[1:]):
    assert a["peak_tensor_bytes"] <= b["peak_tensor_bytes"], (a, b)
    assert a["peak_rss_bytes"] <= b["peak_rss_bytes"], (a, b)
PY
# The Mixture-of-Experts config of the suite, at tp 2: it trains (the loss falls in 10 steps).
out=$(mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$root/configs/moe-tiny.toml" \
  --set parallel.tp=2 --set train.steps=10 --set train.log_every=1 \
  --set logging.metrics="$tmp/moe.jsonl" --set logging.run_dir=none 2>&1) ||
  fail "configs/moe-tiny.toml exited non-zero: $out"
# The progress line names the step's expert load, as the metrics file counts it.
last=$(echo "$out" | grep "^step 10/10 | ") || fail "no progress line of step 10: $out"
load=$(echo "$last" | sed -n 's/.* | expert load \([0-9]*\.\.[0-9]*\).*/\1/p')
[ -n "$load" ] || fail "the progress line has no expert load: $last"
python3 - "$tmp/moe.jsonl" "$load" <<'PY' || fail "the progress line's expert load $load is not the metrics'"
import json, sys
row = [json.loads(l) for l in open(sys.argv[1])][-1]
lo = min(l[1] for l in row["moe"]["load"])
hi = max(l[2] for l in row["moe"]["load"])
assert sys.argv[2] == f"{lo}..{hi}", (sys.argv[2], lo, hi)
PY
python3 - "$tmp/moe.jsonl" <<'PY' || fail "configs/moe-tiny.toml did not learn"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 10 and rows[-1]["loss"] < rows[0]["loss"] - 0.1, rows
# Every layer is MoE: 32 sequences of 32 tokens, 2 choices each over 4 experts, an even
# share of 512; dropless; the auxiliary losses (load balancing, z) are positive.
for r in rows:
    moe = r["moe"]
    assert [l[0] for l in moe["load"]] == [0, 1, 2, 3], moe
    assert all(lo <= 512 <= hi for _, lo, hi in moe["load"]), moe
    assert moe["dropped"] == 0 and moe["aux_loss"] > 0, moe
print(f"moe-tiny at tp 2: loss {rows[0]['loss']:.4f} -> {rows[-1]['loss']:.4f} in 10 steps")
PY
echo "train_smoke: ok"
