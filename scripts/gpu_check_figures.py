#!/usr/bin/env python3
"""The figures of scripts/gpu-check.sh, each held to its bound: writes OUT/gpu-check.json and
exits 1 when a run failed, a figure is missing, or one is outside its bound.

    gpu_check_figures.py OUT --steps N --shared ran|failed|skipped [--failed STEP ...]
    gpu_check_figures.py --peak-for "DEVICE NAME"   # the peak the table gives, and why

Bounds:
  - fp64 parity, CPU against GPU (and one rank against 2 ranks sharing the GPU): every
    step's loss and gradient norm, and every weight of the final checkpoint (its largest
    difference over the tensor's largest magnitude), within a relative PARITY_BOUND. The
    layout parity tests hold 1e-10 on one CPU; a GPU sums in other orders, and 1e-9 leaves
    it ten times that while still failing on any real difference (a learning rate off by
    one part in 10^4 moves these figures by about 10^-6).
  - GPT-2's MFU in (0, 1]: above 1 the peak is wrong, not the run fast.
MFU is the median TFLOP/s over the device's peak bf16 rate, taken, in this order, from
GPU_PEAK_TFLOPS, from PEAKS below by the device's name (nvidia-smi), or by timing a bf16
matmul with PyTorch; the JSON names the source.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "scripts"))
from safetensors_read import float64_values, read_safetensors  # noqa: E402

PARITY_BOUND = 1e-9
PARITY_STEPS = 6

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s from NVIDIA's datasheets, matched
# in order against nvidia-smi's name (the first match wins: H200 NVL before H200, A100
# before A10, L40S before L4). The datasheets print the sparse figure first: half of it.
PEAKS = [
    (r"H200 NVL", 835.0, "NVIDIA H200 NVL datasheet, bf16 dense"),
    (r"H200", 989.4, "NVIDIA H200 SXM datasheet, bf16 dense"),  # GH200's GPU too
    (r"H100 PCIe", 756.0, "NVIDIA H100 PCIe datasheet, bf16 dense"),
    (r"H100 NVL", 835.0, "NVIDIA H100 NVL datasheet, bf16 dense"),
    (r"H100", 989.4, "NVIDIA H100 SXM datasheet, bf16 dense"),
    (r"A100", 312.0, "NVIDIA A100 datasheet, bf16 dense"),
    (r"L40S", 362.1, "NVIDIA L40S datasheet, bf16 dense"),
    (r"\bL4\b", 121.0, "NVIDIA L4 datasheet, bf16 dense"),
    (r"\bA10\b", 125.0, "NVIDIA A10 datasheet, bf16 dense"),
]


def peak_from_table(name):
    for pattern, tflops, source in PEAKS:
        if re.search(pattern, name):
            return tflops, source
    return None, None


def measured_peak():
    """The best of 20 bf16 8192^3 matmuls with PyTorch on cuda:0, or (None, why)."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None, "PyTorch sees no GPU"
        n = 8192
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            a @ b
        best = math.inf
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            a @ b
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3)
        return 2 * n**3 / best / 1e12, f"measured: best of 20 bf16 {n}^3 matmuls (PyTorch)"
    except Exception as e:  # no PyTorch, no CUDA: say why in the JSON
        return None, f"no measurement ({type(e).__name__}: {e})"


def peak_tflops(device_name):
    if os.environ.get("GPU_PEAK_TFLOPS"):
        return float(os.environ["GPU_PEAK_TFLOPS"]), "GPU_PEAK_TFLOPS"
    tflops, source = peak_from_table(device_name)
    if tflops:
        return tflops, source
    return measured_peak()


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


class Report:
    def __init__(self, out):
        self.out, self.figures, self.failures = out, {}, []

    def rows(self, name):
        path = f"{self.out}/{name}.jsonl"
        return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []

    def bounded(self, key, value, low, high, what):
        self.figures[key] = value
        if not (low <= value <= high):
            self.failures.append(f"{key} = {value:.3g} is outside [{low:g}, {high:g}] ({what})")

    def steps_compared(self, key, a, b):
        if len(a) != PARITY_STEPS or len(b) != PARITY_STEPS:
            self.failures.append(f"{key}: {len(a)} and {len(b)} steps logged, not {PARITY_STEPS}")
        return list(zip(a, b))

    def parity(self):
        pairs = self.steps_compared("parity", self.rows("parity-host"), self.rows("parity-gpu"))
        self.figures["parity_steps"] = len(pairs)
        for k in ("loss", "grad_norm"):
            worst = max((rel(a[k], b[k]) for a, b in pairs), default=math.inf)
            self.bounded(f"parity_{k}_rel", worst, 0, PARITY_BOUND, "fp64, CPU against GPU")
        worst, count = 0.0, 0
        host_files = sorted(glob.glob(f"{self.out}/parity-host/step_{PARITY_STEPS}/*.safetensors"))
        for path in host_files:
            if not os.path.exists(path.replace("parity-host", "parity-gpu")):
                self.failures.append(f"parity: the GPU run saved no {os.path.basename(path)}")
                continue
            theirs = read_safetensors(path.replace("parity-host", "parity-gpu"))
            for name, (dtype, _, raw) in read_safetensors(path).items():
                if dtype != "F64":
                    continue
                mine, other = float64_values(raw), float64_values(theirs[name][2])
                scale = max(max(abs(x) for x in mine), 1e-300)
                worst = max(worst, max(abs(x - y) for x, y in zip(mine, other)) / scale)
                count += 1
        self.figures["parity_tensors"] = count
        if count == 0:
            self.failures.append("parity: no fp64 tensor in the final checkpoints")
        self.bounded("parity_weights_rel", worst, 0, PARITY_BOUND, "fp64, CPU against GPU")

    def gpt2(self, steps):
        every = self.rows("gpt2")
        self.figures["gpt2_steps"] = len(every)
        if len(every) != steps:
            self.failures.append(f"gpt2: {len(every)} steps logged, not {steps}")
            return
        timed = every[10:] if len(every) > 10 else every  # after warm-up when there is one
        tflops = statistics.median(r["tflops"] for r in timed)
        peak, source = peak_tflops(self.figures["gpu"])
        self.figures.update({
            "gpt2_tokens_per_s": statistics.median(r["tokens_per_s"] for r in timed),
            "gpt2_tflops": tflops, "gpt2_final_loss": every[-1]["loss"],
            "peak_tflops": peak, "peak_source": source})
        if not math.isfinite(every[-1]["loss"]):
            self.failures.append(f"gpt2: final loss {every[-1]['loss']}")
        if peak is None:
            self.failures.append(f"no peak bf16 rate for '{self.figures['gpu']}' ({source}): "
                                 "set GPU_PEAK_TFLOPS")
        else:
            self.bounded("gpt2_mfu", tflops / peak, 1e-12, 1.0, f"against {peak:g} TFLOP/s, {source}")

    def shared(self, state, gpu_run):
        self.figures["shared_gpu_dp2"] = state
        if state != "ran" or not gpu_run:  # nothing to compare with: failed already
            return
        pairs = self.steps_compared("shared_gpu_dp2", self.rows("parity-gpu"), self.rows("shared-dp2"))
        worst = max((rel(a["loss"], b["loss"]) for a, b in pairs), default=math.inf)
        self.bounded("shared_gpu_dp2_loss_rel", worst, 0, PARITY_BOUND,
                     "fp64, one rank against 2 ranks sharing the GPU")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--shared", default="skipped")
    ap.add_argument("--failed", nargs="*", default=[])
    ap.add_argument("--build-s", type=int, default=0)
    ap.add_argument("--peak-for")
    a = ap.parse_args()
    if a.peak_for is not None:
        tflops, source = peak_from_table(a.peak_for)
        print(f"{tflops} {source}")
        return 0 if tflops else 1
    r = Report(a.out)
    r.figures.update({"build_s": a.build_s, "parity_bound": PARITY_BOUND,
                      "gpu": open(f"{a.out}/gpu.txt").read().strip()})
    r.failures += [f"{step} failed (its log is in {a.out})" for step in a.failed]
    if "parity" not in a.failed:
        r.parity()
    if "gpt2" not in a.failed:
        r.gpt2(a.steps)
    if a.shared == "failed":
        r.failures.append(f"2 ranks sharing the GPU failed (shared-dp2.log in {a.out})")
    r.shared(a.shared, gpu_run="parity" not in a.failed)
    r.figures["failures"] = r.failures
    r.figures["ok"] = not r.failures
    with open(f"{a.out}/gpu-check.json", "w") as f:
        json.dump(r.figures, f, indent=1)
    print(json.dumps(r.figures, indent=1))
    for failure in r.failures:
        print(f"gpu-check: FAILED: {failure}", file=sys.stderr)
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
