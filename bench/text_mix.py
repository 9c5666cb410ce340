#!/usr/bin/python3
"""The real-text recipe (configs/text-mix.toml) read in epochs against windows drawn at
random, at equal steps: validation loss at each evaluation, the evaluation's time against
a step's, and the last sample. Trains both (or reads run directories already trained) and
appends a table to bench/results/text-mix.md.

    bench/text_mix.py [--runs DIR] [--results FILE]

Needs build/trident and the recipe's data (scripts/prepare-text-mix.sh).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train(run_dir, order):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1")
    subprocess.run(["mpirun", "-np", "1", "--oversubscribe", "--bind-to", "none",
                    os.path.join(ROOT, "build/trident"), "train",
                    os.path.join(ROOT, "configs/text-mix.toml"), "--set", "data.order=" + order,
                    "--set", "logging.run_dir=" + run_dir], check=True, env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def summary(run_dir):
    rows = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    evals = [r for r in rows if "val_loss" in r]
    steps = [r["step_time_s"] for r in rows]
    samples = open(os.path.join(run_dir, "samples.txt")).read().splitlines()
    return evals, sum(steps) / len(steps), samples[-1] if samples else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="/tmp/trident-text-mix", help="where the runs go")
    parser.add_argument("--results", default=os.path.join(ROOT, "bench/results/text-mix.md"))
    parser.add_argument("--reuse", action="store_true", help="read runs already in --runs")
    args = parser.parse_args()
    table = {}
    for order in ("epochs", "windows"):
        run_dir = os.path.join(args.runs, order)
        if not args.reuse:
            train(run_dir, order)
        table[order] = summary(run_dir)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [f"\n## {datetime.date.today()}, commit {commit}\n",
             "| step | val_loss (epochs) | val_loss (windows) | fortunes (epochs / windows) "
             "| reference (epochs / windows) |", "|---|---|---|---|---|"]
    for a, b in zip(table["epochs"][0], table["windows"][0]):
        fa, fb = a["val_loss_by_source"], b["val_loss_by_source"]
        lines.append(f"| {a['step']} | {a['val_loss']:.4f} | {b['val_loss']:.4f} | "
                     f"{fa['fortunes']:.4f} / {fb['fortunes']:.4f} | "
                     f"{fa['reference']:.4f} / {fb['reference']:.4f} |")
    for order, (evals, step_s, sample) in table.items():
        eval_s = sum(r["eval_s"] for r in evals) / len(evals)
        lines.append(f"\n{order}: an evaluation {eval_s:.3f} s against a step's "
                     f"{step_s:.3f} s ({eval_s / step_s:.1f} steps); last sample {sample}")
    os.makedirs(os.path.dirname(args.results), exist_ok=True)
    new = not os.path.exists(args.results)
    with open(args.results, "a") as out:
        if new:
            out.write("# configs/text-mix.toml: epochs against windows (bench/text_mix.py)\n")
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
