#!/usr/bin/python3
"""Draws PNGs from a trident run directory: the loss against the source's entropy floor,
tokens/s per step, and the pipeline timeline of the first recorded step from the trace.

usage: scripts/plot.py RUN_DIR [--out DIR]   (Debian: python3-matplotlib)
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        sys.exit(f"plot.py: {path} not found (is {run_dir} a run directory?)")
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    # A resumed run appends the steps after its checkpoint again, and a rollback its steps
    # after the step it went back to: the last record of each step is the run's.
    last = {r["step"]: r for r in rows}
    return [last[s] for s in sorted(last)]


def read_run_info(run_dir):
    path = os.path.join(run_dir, "run.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def plot_loss(rows, info, out):
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in rows], [r["loss"] for r in rows], label="training loss")
    # Validation ([eval]): the loss over the eval set, and per source for a mixture.
    evals = [r for r in rows if "val_loss" in r]
    if evals:
        ax.plot([r["step"] for r in evals], [r["val_loss"] for r in evals], "o-",
                label="validation loss")
        for name in sorted(evals[-1].get("val_loss_by_source", {})):
            ax.plot([r["step"] for r in evals], [r["val_loss_by_source"][name] for r in evals],
                    ".--", label=f"validation: {name}")
    floor = info.get("loss_floor")
    if floor is not None:
        ax.axhline(floor, color="gray", linestyle="--", label=f"entropy floor {floor:.3f}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats)")
    ax.set_title(info.get("title", "loss"))
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_throughput(rows, out):
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot([r["step"] for r in rows], [r["tokens_per_s"] for r in rows])
    ax.set_xlabel("step")
    ax.set_ylabel("tokens/s")
    ax.set_title("throughput")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


COLORS = {"forward": "#4c72b0", "backward": "#dd8452", "recv": "#bbbbbb", "send": "#999999",
          "reduce": "#55a868", "optimizer": "#c44e52"}


def plot_timeline(trace_path, out):
    with open(trace_path) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    if not events:
        return False
    step = min(e["args"]["step"] for e in events)
    events = [e for e in events if e["args"]["step"] == step]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    ranks = sorted({e["pid"] for e in events})
    t0 = min(e["ts"] for e in events)
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(ranks) + 1.2))
    for row, rank in enumerate(ranks):
        for e in events:
            if e["pid"] != rank or e["cat"] in ("send",):
                continue
            start, dur = (e["ts"] - t0) / 1e3, e["dur"] / 1e3
            ax.broken_barh([(start, dur)], (row - 0.4, 0.8), color=COLORS.get(e["cat"], "k"))
            if e["cat"] in ("forward", "backward") and dur > 0:
                ax.text(start + dur / 2, row, str(e["args"]["micro_batch"]), ha="center",
                        va="center", fontsize=6, color="white")
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([names.get(r, f"rank {r}") for r in ranks], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ms since the step began")
    ax.set_title(f"pipeline timeline, step {step} (blue forward, orange backward, "
                 "grey waiting, green gradient reduction, red optimizer)", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--out", help="where the PNGs go (default: RUN_DIR)")
    args = parser.parse_args()
    out = args.out or args.run_dir
    os.makedirs(out, exist_ok=True)
    rows = read_metrics(args.run_dir)
    info = read_run_info(args.run_dir)
    written = [os.path.join(out, "loss.png"), os.path.join(out, "throughput.png")]
    plot_loss(rows, info, written[0])
    plot_throughput(rows, written[1])
    trace = os.path.join(args.run_dir, "trace.json")
    if os.path.exists(trace) and plot_timeline(trace, os.path.join(out, "timeline.png")):
        written.append(os.path.join(out, "timeline.png"))
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
