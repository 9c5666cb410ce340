#!/usr/bin/env bash
# scripts/gpu-check.sh --rehearse: the GPU node's one prepared script, run here with the CPU
# in the GPU's place (single-process build, small GPT-2), so that the script itself is
# known to work before a GPU runs it: every figure of its JSON is there, and the "GPU"
# run, being the CPU again, matches the CPU run exactly.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
OUT=$tmp/out JOBS=$(getconf _NPROCESSORS_ONLN) "$root/scripts/gpu-check.sh" --rehearse \
  >"$tmp/log" 2>&1 || fail "gpu-check.sh --rehearse failed: $(tail -30 "$tmp/log")"
/usr/bin/python3 - "$tmp/out/gpu-check.json" <<'PY' || fail "gpu-check.json: $(cat "$tmp/out/gpu-check.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["parity_steps"] == 6 and r["parity_tensors"] > 100, r
assert r["parity_loss_rel"] == r["parity_grad_norm_rel"] == r["parity_weights_rel"] == 0.0, r
assert r["gpt2_steps"] == 12 and r["gpt2_tokens_per_s"] > 0 and 0 < r["gpt2_mfu"] < 1, r
assert 5 < r["gpt2_final_loss"] < 12, r
assert r["shared_gpu_dp2"] == "skipped", r  # the single-process build has no MPI
PY
echo "gpu_check_rehearsal: ok"
