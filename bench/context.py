#!/usr/bin/env python3
"""Context parallelism on this machine: a sequence too long for one rank's memory trains
when 4 ranks split it, and on a sequence that fits, tokens/s and the ring's exposed
communication at cp 4 against cp 1 on the same 4 ranks.

  python3 bench/context.py [--trident build/trident] [--rounds 3] [--steps 6]

The model is a Llama of 2 layers (hidden 128, 8 heads over 2 kv heads, SwiGLU 352,
vocabulary 256, fp32), a global batch of 4 sequences on 4 ranks: cp 1 is dp 4 (each rank a
whole sequence), cp 4 splits every sequence over the 4 ranks (each rank 2 of its 8 chunks).

  * fits: seq_len 1024. Alternated rounds of both layouts; a run's step time is the median
    of its steps after the first two, the figure the median over rounds with the range.
    "exposed ring" is the share of the cp 4 step its rank 0 spent inside the ring's
    transfers (posting and waiting: wait_s.cp in the metrics).
  * capped: seq_len 2048, whose whole-sequence attention keeps a 2048 x 2048 softmax per
    head and layer. Both layouts first run uncapped for their peak RSS per rank; then both
    run inside one cgroup v1 memory cap over the 4 ranks, halfway between the two peaks:
    cp 1 is killed there, cp 4 trains. The cgroup is made under /sys/fs/cgroup/memory and
    removed afterwards, also on failure.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from memory_cap import run_capped

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKS = 4
BASE = ["model.arch=llama", "model.layers=2", "model.hidden=128", "model.heads=8",
        "model.kv_heads=2", "model.ffn_hidden=352", "model.vocab=256", "train.micro_batch_size=1",
        f"train.global_batch_size={RANKS}", "train.precision=fp32", "train.log_every=1",
        "train.threads=1", "logging.run_dir=none", "parallel.pp=1", "parallel.tp=1"]
LAYOUTS = {"cp 1 (dp 4)": ["parallel.dp=4", "parallel.cp=1"],
           "cp 4": ["parallel.dp=1", f"parallel.cp={RANKS}"]}


def command(trident, seq_len, sets, steps, metrics):
    cmd = [trident, "train", os.path.join(ROOT, "configs", "tiny.toml")]
    for s in BASE + sets + [f"model.seq_len={seq_len}", f"train.steps={steps}",
                            f"logging.metrics={metrics}"]:
        cmd += ["--set", s]
    return ["mpirun", "-np", str(RANKS), "--oversubscribe", "--bind-to", "none"] + cmd


def environment():
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1")


def summary(metrics):
    rows = [json.loads(line) for line in open(metrics)]
    tail = rows[2:] if len(rows) > 2 else rows
    return {"step": statistics.median(r["step_time_s"] for r in tail),
            "ring": statistics.median(r["wait_s"].get("cp", 0.0) / r["step_time_s"] for r in tail),
            "peak": max(r["peak_rss_bytes"] for r in rows),
            "losses": [r["loss"] for r in rows]}


def run(trident, seq_len, sets, steps, metrics):
    subprocess.run(command(trident, seq_len, sets, steps, metrics), check=True,
                   env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    return summary(metrics)


def run_capped(trident, seq_len, sets, steps, metrics, limit_bytes, name):
    """The job inside a fresh memory cgroup of `limit_bytes` (all ranks together): (exit
    code, summary or None)."""
    code = run_capped(command(trident, seq_len, sets, steps, metrics), limit_bytes,
                      f"context-{name}", env=environment())
    done = code == 0 and os.path.exists(metrics)
    return code, summary(metrics) if done else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trident", default=os.path.join(ROOT, "build", "trident"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--fits-seq", type=int, default=1024)
    ap.add_argument("--capped-seq", type=int, default=2048)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        steps = {l: [] for l in LAYOUTS}
        ring = []
        for r in range(args.rounds):
            for layout, sets in LAYOUTS.items():
                s = run(args.trident, args.fits_seq, sets, args.steps,
                        os.path.join(tmp, f"fits-{r}-{len(steps[layout])}.jsonl"))
                steps[layout].append(s["step"])
                if layout == "cp 4":
                    ring.append(s["ring"])
        tokens = RANKS * args.fits_seq
        print(f"fits: seq_len {args.fits_seq}, {RANKS} ranks, {args.rounds} alternated rounds, "
              "median step (range)")
        print("| layout | step | tokens/s | exposed ring |")
        print("|---|---|---|---|")
        for layout in LAYOUTS:
            t = steps[layout]
            exposed = f"{100 * statistics.median(ring):.1f}% of the step" if layout == "cp 4" else "-"
            print(f"| {layout} | {statistics.median(t):.3f} s ({min(t):.3f}-{max(t):.3f}) "
                  f"| {tokens / statistics.median(t):.0f} | {exposed} |")
        ratios = [a / b for a, b in zip(steps["cp 1 (dp 4)"], steps["cp 4"])]
        print(f"cp 4 tokens/s over cp 1: {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f})\n")

        free = {l: run(args.trident, args.capped_seq, sets, 3,
                       os.path.join(tmp, f"free-{l[:4].strip()}.jsonl"))
                for l, sets in LAYOUTS.items()}
        low, high = free["cp 4"]["peak"], free["cp 1 (dp 4)"]["peak"]
        cap = RANKS * (low + high) // 2
        print(f"capped: seq_len {args.capped_seq}; peak RSS a rank uncapped: cp 1 "
              f"{high / 2**20:.0f} MiB, cp 4 {low / 2**20:.0f} MiB; cap {cap / 2**20:.0f} MiB "
              f"over the {RANKS} ranks ({cap / RANKS / 2**20:.0f} MiB a rank); uncapped step: cp 1 "
              f"{free['cp 1 (dp 4)']['step']:.3f} s, cp 4 {free['cp 4']['step']:.3f} s")
        print("| layout | exit | steps | step | tokens/s | peak RSS a rank | exposed ring |")
        print("|---|---|---|---|---|---|---|")
        for layout, sets in LAYOUTS.items():
            code, s = run_capped(args.trident, args.capped_seq, sets, args.steps,
                                 os.path.join(tmp, f"capped-{layout[:4].strip()}.jsonl"), cap,
                                 layout[:4].strip().replace(" ", ""))
            if s is None:
                print(f"| {layout} | {code} (killed) | - | - | - | - | - |")
                continue
            exposed = f"{100 * s['ring']:.1f}%" if layout == "cp 4" else "-"
            print(f"| {layout} | {code} | {len(s['losses'])}, loss {s['losses'][0]:.3f} -> "
                  f"{s['losses'][-1]:.3f} | {s['step']:.3f} s | "
                  f"{RANKS * args.capped_seq / s['step']:.0f} | {s['peak'] / 2**20:.0f} MiB "
                  f"| {exposed} |")


if __name__ == "__main__":
    main()
