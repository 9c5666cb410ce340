#!/usr/bin/env bash
# scripts/gpu-check.sh --rehearse: the GPU node's one prepared script, run here with the CPU
# in the GPU's place (single-process build, small GPT-2), so that the script itself is
# known to work before a GPU runs it: run clean, it passes with every figure of its JSON
# within its bound (the "GPU" run, being the CPU again, matches the CPU run exactly); with
# a fault injected (GPU_CHECK_INJECT), it exits 1 and names that fault and nothing else: a
# parity run that fails, and a learning rate one part in 10^4 off, which moves the parity
# figures far less than any eye would see but far more than the 1e-9 bound allows. The
# table of peak rates is checked by name.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One core, as this test claims (PROCESSORS 1): scripts/test.sh has built the single-process
# tree already, and a rebuild after a source change must not take the core of the test
# beside it (it did, and a Slurm test's clean-up ran late).
export JOBS=1
# The CPU has no entry in the table of GPU peaks: a peak far above its rate, so that the
# MFU is a small positive fraction.
export GPU_PEAK_TFLOPS=1

rehearse() {  # rehearse NAME [ARGS...]: exit code of the script, its output in $tmp/NAME.log
  local name=$1
  shift
  OUT=$tmp/$name "$root/scripts/gpu-check.sh" --rehearse "$@" >"$tmp/$name.log" 2>&1
}
figures() {  # figures NAME PYTHON: asserts PYTHON about r, the JSON of run NAME
  /usr/bin/python3 - "$tmp/$1/gpu-check.json" "$2" <<'PY' || fail "$1: $(cat "$tmp/$1/gpu-check.json")"
import json, sys
r = json.load(open(sys.argv[1]))
exec(sys.argv[2])
PY
}

rehearse clean || fail "gpu-check.sh --rehearse failed: $(tail -30 "$tmp/clean.log")"
figures clean '
assert r["ok"] and r["failures"] == [], r
assert r["parity_steps"] == 6 and r["parity_tensors"] > 100, r
assert r["parity_bound"] == 1e-9, r
assert r["parity_loss_rel"] == r["parity_grad_norm_rel"] == r["parity_weights_rel"] == 0.0, r
assert r["gpt2_steps"] == 12 and r["gpt2_tokens_per_s"] > 0, r
assert r["peak_tflops"] == 1.0 and r["peak_source"] == "GPU_PEAK_TFLOPS", r
assert r["gpt2_mfu"] == r["gpt2_tflops"] and 0 < r["gpt2_mfu"] < 1, r
assert 5 < r["gpt2_final_loss"] < 12, r
assert r["shared_gpu_dp2"] == "skipped", r  # the single-process build has no MPI
print("clean: passed; mfu", r["gpt2_mfu"])
'
echo "clean rehearsal: passed"

GPU_CHECK_INJECT=step rehearse step --steps 2
code=$?
[ $code -eq 1 ] || fail "a parity run that failed: exit $code, not 1: $(tail -30 "$tmp/step.log")"
figures step '
assert not r["ok"] and len(r["failures"]) == 1 and r["failures"][0].startswith("parity failed"), r
assert "parity_loss_rel" not in r and r["gpt2_steps"] == 2, r
'
grep -q "FAILED: parity failed" "$tmp/step.log" || fail "the failed step is not named: $(cat "$tmp/step.log")"
echo "a failed parity run: exit 1"

GPU_CHECK_INJECT=parity rehearse parity --steps 2
code=$?
[ $code -eq 1 ] || fail "parity out of bound: exit $code, not 1: $(tail -30 "$tmp/parity.log")"
figures parity '
bad = [k for k in ("parity_loss_rel", "parity_grad_norm_rel", "parity_weights_rel") if r[k] > 1e-9]
assert bad and not r["ok"], r
assert len(r["failures"]) == len(bad) and all(f.split(" ")[0] in bad for f in r["failures"]), r
assert r["parity_loss_rel"] < 1e-4, r  # small: the bound, not a gross difference, catches it
print("parity fault:", {k: r[k] for k in bad})
'
echo "parity figures out of bound: exit 1"

peak() { "$root/scripts/gpu_check_figures.py" --peak-for "$1" | cut -d' ' -f1; }
[ "$(peak 'NVIDIA H200, 143771 MiB, 550.54.15')" = 989.4 ] || fail "H200's peak: $(peak 'NVIDIA H200')"
[ "$(peak 'NVIDIA H100 PCIe')" = 756.0 ] || fail "H100 PCIe's peak: $(peak 'NVIDIA H100 PCIe')"
[ "$(peak 'NVIDIA A100-SXM4-80GB')" = 312.0 ] || fail "A100's peak"
[ "$(peak 'NVIDIA A10')" = 125.0 ] || fail "A10's peak"
[ "$(peak 'NVIDIA L4')" = 121.0 ] || fail "L4's peak"
"$root/scripts/gpu_check_figures.py" --peak-for "no nvidia-smi" >/dev/null && fail "a peak for no GPU"
echo "gpu_check_rehearsal: ok"
