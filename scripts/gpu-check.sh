#!/usr/bin/env bash
# The GPU check, one script for a node with a GPU and PyTorch (docs/gpu.md), in about five
# minutes on an H200: builds trident against the installed PyTorch (scripts/build.sh --cuda),
# then
#   1. parity: the tiny GPT, 6 steps in fp64 with ZeRO-1, on the CPU and on the GPU; the
#      largest relative difference of the loss and gradient norm of each step, and of every
#      weight of the final checkpoint;
#   2. throughput: GPT-2 124M in bf16 on one GPU, 50 steps (64 sequences of 1024 tokens a
#      step), tokens/s and MFU against the H200's measured 790 TFLOP/s bf16 matmul rate
#      (the median of steps 11-50);
#   3. communicators: both runs above go through the NCCL communicator (one rank: NCCL
#      takes one rank per GPU); where mpirun and an MPI build exist, 2 ranks sharing the
#      GPU (dp 2, host-staged) against the one-rank GPU run.
# Writes its figures to $OUT/gpu-check.json (OUT defaults to gpu-check/) with the logs.
#   scripts/gpu-check.sh [--steps N]
#   scripts/gpu-check.sh --rehearse   the same steps on a machine without a GPU, to check
#       the script: the single-process CPU build, "cuda" replaced by the CPU, and a GPT-2
#       of 2 layers over 128 tokens
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
steps=50
gpu=cuda
gpt2_sets=()
rehearse=false
case "${1:-}" in
  --steps) steps=$2 ;;
  --rehearse)
    rehearse=true gpu=cpu steps=12
    gpt2_sets=(--set model.layers=2 --set model.seq_len=128 --set train.global_batch_size=8
      --set train.micro_batch_size=4)
    ;;
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

# 1. Parity in fp64, CPU against GPU.
parity() {  # parity NAME DEVICE: files $out/parity-NAME*
  "$trident" train configs/tiny.toml --set train.device="$2" --set train.precision=fp64 \
    --set train.steps=6 --set train.log_every=1 --set parallel.zero_stage=1 \
    --set logging.run_dir=none --set logging.metrics="$out/parity-$1.jsonl" \
    --set checkpoint.dir="$out/parity-$1" --set checkpoint.save_every=6 >"$out/parity-$1.log" 2>&1 ||
    { note "parity on $2 failed: $(tail -5 "$out/parity-$1.log")"; return 1; }
}
rm -rf "$out"/parity-*
parity_ok=true
parity host cpu || parity_ok=false
parity gpu $gpu || parity_ok=false

# 2. GPT-2 124M in bf16.
gpt2_ok=true
"$trident" train configs/gpt2-124m.toml --set train.device=$gpu --set train.steps="$steps" \
  --set train.global_batch_size=64 --set train.micro_batch_size=8 --set train.log_every=1 \
  --set logging.run_dir=none --set logging.metrics="$out/gpt2.jsonl" "${gpt2_sets[@]}" \
  >"$out/gpt2.log" 2>&1 ||
  { gpt2_ok=false; note "GPT-2 124M failed: $(tail -5 "$out/gpt2.log")"; }

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
fi

"$py" - "$out" "$build_s" "$parity_ok" "$gpt2_ok" "$shared" <<'PY'
import array, glob, json, os, statistics, struct, sys
out, build_s, parity_ok, gpt2_ok, shared = sys.argv[1:6]
report = {"build_s": int(build_s), "gpu": open(f"{out}/gpu.txt").read().strip()}

def rows(name):
    path = f"{out}/{name}.jsonl"
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []

def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)

if parity_ok == "true":
    cpu, gpu = rows("parity-host"), rows("parity-gpu")
    report["parity_steps"] = len(gpu)
    report["parity_loss_rel"] = max(rel(a["loss"], b["loss"]) for a, b in zip(cpu, gpu))
    report["parity_grad_norm_rel"] = max(rel(a["grad_norm"], b["grad_norm"]) for a, b in zip(cpu, gpu))
    worst, count = 0.0, 0
    def tensors(path):  # name -> the float64 values of a safetensors file
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            data = f.read()
        for k, v in header.items():
            if k != "__metadata__" and v["dtype"] == "F64":
                a, b = v["data_offsets"]
                yield k, array.array("d", data[a:b])
    for a in sorted(glob.glob(f"{out}/parity-host/step_6/*.safetensors")):
        theirs = dict(tensors(a.replace("parity-host", "parity-gpu")))
        for k, t in tensors(a):
            scale = max(max(abs(x) for x in t), 1e-300)
            worst = max(worst, max(abs(x - y) for x, y in zip(t, theirs[k])) / scale)
            count += 1
    report["parity_weights_rel"], report["parity_tensors"] = worst, count
else:
    report["parity"] = "failed"

if gpt2_ok == "true":
    every = rows("gpt2")
    g = every[10:] if len(every) > 10 else every  # the median after warm-up when there is one
    tps = statistics.median(r["tokens_per_s"] for r in g)
    tflops = statistics.median(r["tflops"] for r in g)
    report.update({"gpt2_steps": len(every), "gpt2_tokens_per_s": tps, "gpt2_tflops": tflops,
                   "gpt2_mfu": tflops / 790.0, "gpt2_final_loss": rows("gpt2")[-1]["loss"]})
else:
    report["gpt2"] = "failed"

report["shared_gpu_dp2"] = shared
if shared == "ran":
    one, two = rows("parity-gpu"), rows("shared-dp2")
    report["shared_gpu_dp2_loss_rel"] = max(rel(a["loss"], b["loss"]) for a, b in zip(one, two))
json.dump(report, open(f"{out}/gpu-check.json", "w"), indent=1)
print(json.dumps(report, indent=1))
PY
note "done in $(($(date +%s) - t0)) s; figures in $out/gpu-check.json"
