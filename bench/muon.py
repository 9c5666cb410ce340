#!/usr/bin/python3
"""Muon against AdamW, each figure a ratio from this run, appended to bench/results/muon.md.

    bench/muon.py [--parts speed,convergence] [--runs DIR] [--results FILE]

speed: the step time of optimizer.name = "muon" over "adamw" on the performance bench's GPT
  (hidden 768, 4 layers, 12 heads, sequence 256, GPT-2's vocabulary, fp32, micro-batch 4),
  at one rank with two threads (a global batch of one micro-batch and of eight) and at dp 4
  with ZeRO 1 (one thread a rank, one micro-batch a rank): Newton-Schulz's work is fixed per step
  (about 0.5 TFLOP for this model's 16 matrices, spread over the owners), the model's grows
  with the tokens. Alternated rounds, medians of the steps after the first two.
convergence: the real-text recipe (configs/text-mix.toml, 600 steps, wsd): AdamW's final
  validation loss at the best learning rate of a grid, and the fewest steps (of a list of
  run lengths, each with its own schedule) at which Muon, also at its best rate of the
  same grid, reaches it. One thread a run (the figures are losses, not times).

Needs build/trident; convergence needs the recipe's data (scripts/prepare-text-mix.sh).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1")
GPT = ["model.arch=gpt2", "model.hidden=768", "model.layers=4", "model.heads=12",
       "model.seq_len=256", "model.vocab=50257", "model.vocab_multiple=128",
       "train.micro_batch_size=4", "train.precision=fp32", "optimizer.warmup_steps=100",
       "guard.enabled=false", "train.log_every=1"]
LRS = (1e-3, 3e-3, 1e-2, 3e-2)  # the grid both optimizers choose from
MUON_STEPS = (150, 300, 450, 600)  # run lengths Muon is tried at, shortest first


def train(run_dir, ranks, sets, config="configs/tiny.toml", env=None):
    shutil.rmtree(run_dir, ignore_errors=True)  # a fresh run each time
    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
           os.path.join(ROOT, "build/trident"), "train", os.path.join(ROOT, config),
           "--set", "logging.run_dir=" + run_dir, "--set", "checkpoint.dir="]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, env=dict(ENV, **(env or {})), cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    return [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]


def step_time(rows):
    return statistics.median(r["step_time_s"] for r in rows[2:])


def speed(runs, lines):
    lines += ["", "### Step time, Muon over AdamW (the performance bench's GPT)", "",
              "| layout | tokens a step | AdamW s/step | Muon s/step | Muon / AdamW | rounds |",
              "|---|---|---|---|---|---|"]
    layouts = [("1 rank, 2 threads", 1, ["parallel.dp=1", "train.threads=2"], {"OMP_NUM_THREADS": "2"}),
               ("dp 4, ZeRO 1", 4, ["parallel.dp=4", "parallel.zero_stage=1", "train.threads=1"],
                {"OMP_NUM_THREADS": "1"})]
    for name, ranks, sets, env in layouts:
        for micro_batches in ((1, 8) if ranks == 1 else (1,)):
            batch = 4 * ranks * micro_batches
            times = {"adamw": [], "muon": []}
            for k in range(2):  # alternated rounds
                for opt in ("adamw", "muon"):
                    rows = train(os.path.join(runs, f"speed-{ranks}-{micro_batches}-{opt}-{k}"), ranks,
                                 GPT + sets + [f"optimizer.name={opt}", "train.steps=4",
                                               f"train.global_batch_size={batch}"], env=env)
                    times[opt].append(step_time(rows))
            a, m = statistics.median(times["adamw"]), statistics.median(times["muon"])
            ratios = ", ".join("%.2f" % (x / y) for x, y in zip(times["muon"], times["adamw"]))
            lines.append(f"| {name} | {batch * 256} | {a:.2f} | {m:.2f} | {m / a:.2f} | {ratios} |")
            print(lines[-1], flush=True)


def convergence(runs, lines):
    recipe = "configs/text-mix.toml"
    final = {}
    for lr in LRS:
        rows = train(os.path.join(runs, f"adamw-{lr}"), 1,
                     [f"optimizer.lr={lr}", f"optimizer.min_lr={lr / 10}", "eval.every=0",
                      "train.threads=1"], recipe, env={"OMP_NUM_THREADS": "1"})
        final[lr] = [r for r in rows if "val_loss" in r][-1]["val_loss"]
        print(f"adamw lr {lr}: {final[lr]:.4f}", flush=True)
    best = min(final, key=final.get)
    target = final[best]
    lines += ["", "### Convergence on the real-text recipe", "",
              f"AdamW, 600 steps, lr grid {list(LRS)} (min_lr = lr / 10): final val_loss "
              + ", ".join(f"{final[lr]:.4f}" for lr in LRS) + f"; best {target:.4f} at lr {best}.",
              "", "| Muon steps | val_loss at lr " + " / ".join(str(lr) for lr in LRS)
              + " | best | reaches AdamW's? |", "|---|---|---|---|"]
    reached = None
    for steps in MUON_STEPS:
        losses = []
        for lr in LRS:
            rows = train(os.path.join(runs, f"muon-{steps}-{lr}"), 1,
                         ["optimizer.name=muon", f"optimizer.lr={lr}", f"optimizer.min_lr={lr / 10}",
                          f"train.steps={steps}", "eval.every=0", "train.threads=1",
                          f"optimizer.warmup_steps={30 * steps // 600}"], recipe,
                         env={"OMP_NUM_THREADS": "1"})
            losses.append([r for r in rows if "val_loss" in r][-1]["val_loss"])
        ok = min(losses) <= target
        lines.append(f"| {steps} | " + " / ".join(f"{l:.4f}" for l in losses)
                     + f" | {min(losses):.4f} | {'yes' if ok else 'no'} |")
        print(lines[-1], flush=True)
        if ok and reached is None:
            reached = steps
            break
    lines += ["", ("Muon reaches AdamW's final validation loss in %d steps: %.2f of AdamW's 600."
                   % (reached, reached / 600)) if reached else
              "Muon does not reach AdamW's final validation loss within 600 steps."]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="speed,convergence")
    parser.add_argument("--runs", default="/tmp/trident-muon-bench")
    parser.add_argument("--results", default=os.path.join(ROOT, "bench/results/muon.md"))
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [f"\n## {datetime.date.today()}, commit {commit}"]
    for part in args.parts.split(","):
        {"speed": speed, "convergence": convergence}[part](args.runs, lines)
    new = not os.path.exists(args.results)
    with open(args.results, "a") as out:
        if new:
            out.write("# Muon against AdamW (bench/muon.py)\n")
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
