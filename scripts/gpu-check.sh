#!/usr/bin/env bash
# The GPU check, one script for a node with a GPU and PyTorch (docs/gpu.md), in about five
# minutes on an H200: builds trident against the installed PyTorch (scripts/build.sh --cuda),
# then
#   1. parity: the tiny GPT, 6 steps in fp64 with ZeRO-1, on the CPU and on the GPU; the
#      largest relative difference of the loss and gradient norm of each step, and of every
#      weight of the final checkpoint, each within 1e-9;
#   2. throughput: GPT-2 124M in bf16 on one GPU, 50 steps (64 sequences of 1024 tokens a
#      step), tokens/s and MFU (the median of steps 11-50) against the device's peak bf16
#      rate: GPU_PEAK_TFLOPS, else NVIDIA's datasheet figure for the device's name, else a
#      timed matmul (scripts/gpu_check_figures.py holds the table; the JSON names the source);
#   3. communicators: both runs above go through the NCCL communicator (one rank: NCCL
#      takes one rank per GPU); where mpirun and an MPI build exist, 2 ranks sharing the
#      GPU (dp 2, host-staged) against the one-rank GPU run, within 1e-9.
# Writes its figures to $OUT/gpu-check.json (OUT defaults to gpu-check/) with the logs, and
# exits 1 when a step failed or a figure is outside its bound (each named on stderr and in
# the JSON's "failures"). Every step runs even after one failed, so one run shows them all.
#   scripts/gpu-check.sh [--steps N]
#   scripts/gpu-check.sh --rehearse [--steps N]   the same steps on a machine without a GPU,
#       to check the script: the single-process CPU build, "cuda" replaced by the CPU, and a
#       GPT-2 of 2 layers over 128 tokens and a vocabulary of 8192
#   GPU_CHECK_INJECT=step|parity   a fault, to show that the check catches it: the GPU
#       parity run refuses its config (step), or trains with its learning rate one part in
#       10^4 higher (parity)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
steps=50
gpu=cuda
gpt2_sets=()
parity_sets=()
rehearse=false
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --rehearse)
      rehearse=true gpu=cpu steps=12
      # fp32: a CPU runs bf16 matmuls about 40x slower (114 s a step of this model); a
      # vocabulary of 8192: GPT-2's 50257 made the head most of the rehearsal's time (44
      # against 16 s for its 12 steps); 4 sequences of 64 tokens a step, in more than one
      # micro-batch as on the GPU: 8 of 128 took 1.6 s a step, 4 of 128 0.79 s and 4 of 64
      # 0.41 s. One thread a run: the rehearsal shares the machine's cores with other tests.
      gpt2_sets=(--set model.layers=2 --set model.seq_len=64 --set model.vocab=8192
        --set train.global_batch_size=4 --set train.micro_batch_size=2 --set train.precision=fp32
        --set train.threads=1)
      parity_sets=(--set train.threads=1)
      shift
      ;;
    *) echo "gpu-check.sh: unknown argument '$1' (see the head of the script)" >&2; exit 2 ;;
  esac
done
inject=()
case "${GPU_CHECK_INJECT:-}" in
  "") ;;
  step) inject=(--set train.no_such_key=1) ;;
  parity) inject=(--set optimizer.lr=3.0003e-3) ;;  # configs/tiny.toml's 3e-3
  *) echo "gpu-check.sh: GPU_CHECK_INJECT is step or parity, not '$GPU_CHECK_INJECT'" >&2; exit 2 ;;
esac
mkdir -p "$out"
py=${PYTHON:-python3}
t0=$(date +%s)
note() { echo "gpu-check: $*" | tee -a "$out/gpu-check.log"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$out/gpu.txt" 2>/dev/null ||
  echo "no nvidia-smi" >"$out/gpu.txt"
note "GPU: $(head -1 "$out/gpu.txt")"
build=(scripts/build.sh --cuda)
trident=build-cuda/trident
if $rehearse; then
  build=(scripts/build.sh --single-process)
  trident=build/single-process/trident
fi
if ! "${build[@]}" >"$out/build.log" 2>&1; then
  note "the build failed; the end of $out/build.log:"
  tail -40 "$out/build.log"
  echo "{\"build\": \"failed\", \"build_s\": $(($(date +%s) - t0))}" >"$out/gpu-check.json"
  exit 1
fi
build_s=$(($(date +%s) - t0))
note "built in $build_s s"

failed=()  # the steps that did not run to the end

# 1. Parity in fp64, CPU against GPU.
parity() {  # parity NAME DEVICE [--set ...]: files $out/parity-NAME*
  local name=$1 device=$2
  shift 2
  "$trident" train configs/tiny.toml --set train.device="$device" --set train.precision=fp64 \
    --set train.steps=6 --set train.log_every=1 --set parallel.zero_stage=1 \
    --set logging.run_dir=none --set logging.metrics="$out/parity-$name.jsonl" \
    --set checkpoint.dir="$out/parity-$name" --set checkpoint.save_every=6 "${parity_sets[@]}" "$@" \
    >"$out/parity-$name.log" 2>&1 ||
    { note "parity on $device failed: $(tail -5 "$out/parity-$name.log")"; return 1; }
}
rm -rf "$out"/parity-* "$out"/gpt2.jsonl "$out"/shared-dp2.jsonl
parity host cpu || failed+=(parity)
parity gpu $gpu "${inject[@]}" || failed+=(parity)

# 2. GPT-2 124M in bf16.
"$trident" train configs/gpt2-124m.toml --set train.device=$gpu --set train.steps="$steps" \
  --set train.global_batch_size=64 --set train.micro_batch_size=8 --set train.log_every=1 \
  --set logging.run_dir=none --set logging.metrics="$out/gpt2.jsonl" "${gpt2_sets[@]}" \
  >"$out/gpt2.log" 2>&1 ||
  { failed+=(gpt2); note "GPT-2 124M failed: $(tail -5 "$out/gpt2.log")"; }

# 3. Ranks sharing the GPU, where MPI is there.
shared=skipped
ldd "$trident" >"$out/ldd.txt" 2>&1 || true
if command -v mpirun >/dev/null && grep -q libmpi "$out/ldd.txt"; then
  # Open MPI refuses root without these; both ranks on the one GPU.
  if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 "$trident" train configs/tiny.toml \
    --set train.device=$gpu --set train.precision=fp64 --set train.steps=6 --set train.log_every=1 \
    --set parallel.dp=2 --set parallel.zero_stage=1 --set logging.run_dir=none \
    --set logging.metrics="$out/shared-dp2.jsonl" >"$out/shared-dp2.log" 2>&1; then
    shared=ran
  else
    shared=failed
  fi
else
  note "2 ranks sharing the GPU: skipped (no mpirun, or $trident was built without MPI)"
fi

# The figures against their bounds; the exit code is theirs.
code=0
"$py" scripts/gpu_check_figures.py "$out" --steps "$steps" --shared "$shared" --build-s "$build_s" \
  --failed $(printf '%s\n' "${failed[@]}" | sort -u) || code=$?
if [ $code -eq 0 ]; then
  note "passed in $(($(date +%s) - t0)) s; figures in $out/gpu-check.json"
else
  note "FAILED (exit $code) after $(($(date +%s) - t0)) s; figures and failures in $out/gpu-check.json"
fi
exit $code
