#!/usr/bin/env python3
"""Tokens/s of a Mixture-of-Experts Llama against the dense Llama of the same active
parameters, on the same ranks and layouts, in alternated rounds on this machine.

  python3 bench/moe.py [--trident build/trident] [--rounds 3] [--steps 12]

The MoE model has E = 8 experts of SwiGLU width f and sends each token to k = 2 of them;
the dense model's MLP is k f wide, so both multiply the same weights per token (the MoE
adds its router, E h, and holds E / k times the MLP weights). Each round trains both
models once per layout (dp 2 and tp 2 on 2 ranks, and one process); a run's step time is
the median of its steps after the first two, the figure the median over rounds, with the
range. The layout "dp 2, ep 2" shares the MoE's experts out over the two ranks (the dense
model runs there at dp 2): each rank computes 4 experts on both ranks' tokens, which meet
in all-to-alls; the last column is the fraction of the MoE step its rank spent inside
them (posting and waiting: the exposed all-to-all). Elsewhere every rank runs every expert,
and what the ratio measures is the cost of routing (the router, the gathers and scatters
of each expert's tokens, its smaller matmuls, and under tp one all-reduce per expert
instead of one per MLP).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BASE = ["model.arch=llama", "model.layers=4", "model.hidden=256", "model.heads=8",
        "model.kv_heads=4", "model.vocab=512", "model.seq_len=128", "train.micro_batch_size=4",
        "train.global_batch_size=16", "train.precision=fp32", "train.log_every=1",
        "train.threads=1", "logging.run_dir=none"]
EXPERTS, TOP_K, EXPERT_FFN = 8, 2, 256
MODELS = {
    "moe": [f"model.ffn_hidden={EXPERT_FFN}", f"model.moe_experts={EXPERTS}",
            f"model.moe_top_k={TOP_K}", f"model.moe_ffn_hidden={EXPERT_FFN}"],
    "dense": [f"model.ffn_hidden={TOP_K * EXPERT_FFN}"],
}
# name: ranks, both models' keys, the MoE's own keys
LAYOUTS = {"1 process": (1, [], []), "dp 2": (2, ["parallel.dp=2"], []),
           "tp 2": (2, ["parallel.dp=1", "parallel.tp=2"], []),
           "dp 2, ep 2": (2, ["parallel.dp=2"], ["parallel.ep=2"])}


def run(trident, ranks, sets, steps, metrics):
    cmd = [trident, "train", os.path.join(ROOT, "configs", "tiny.toml")]
    for s in BASE + sets + [f"train.steps={steps}", f"logging.metrics={metrics}"]:
        cmd += ["--set", s]
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"] + cmd
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    rows = [json.loads(line) for line in open(metrics)][2:]
    return (statistics.median(r["step_time_s"] for r in rows),
            statistics.median(r["wait_s"]["ep"] / r["step_time_s"] for r in rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trident", default=os.path.join(ROOT, "build", "trident"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    times = {(m, l): [] for m in MODELS for l in LAYOUTS}
    exposed = {l: [] for l in LAYOUTS}  # the MoE's all-to-all share of its step
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for layout, (ranks, sets, moe_sets) in LAYOUTS.items():
                for model, model_sets in MODELS.items():
                    path = os.path.join(tmp, f"{model}-{ranks}-{r}.jsonl")
                    own = moe_sets if model == "moe" else []
                    step, a2a = run(args.trident, ranks, model_sets + sets + own, args.steps, path)
                    times[(model, layout)].append(step)
                    if model == "moe":
                        exposed[layout].append(a2a)
    tokens = 16 * 128
    print(f"MoE ({EXPERTS} experts, top {TOP_K}, width {EXPERT_FFN}) against dense (width "
          f"{TOP_K * EXPERT_FFN}), same active parameters; {args.rounds} alternated rounds, "
          "median step (range)")
    print("| layout | dense tokens/s | MoE tokens/s | MoE / dense | exposed all-to-all |")
    print("|---|---|---|---|---|")
    for layout in LAYOUTS:
        d, m = times[("dense", layout)], times[("moe", layout)]
        ratios = [dd / mm for dd, mm in zip(d, m)]
        print(f"| {layout} | {tokens / statistics.median(d):.0f} | {tokens / statistics.median(m):.0f} "
              f"| {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) "
              f"| {100 * statistics.median(exposed[layout]):.1f}% |")


if __name__ == "__main__":
    main()
