#!/usr/bin/env python3
"""Collects a scripts/scale.sh output directory into scaling.csv and draws its plots.

    scripts/plot_scaling.py DIR [--strong]

Reads DIR/runs.tsv (one row per run) and, per layout, metrics.jsonl (the trainer's JSONL;
metrics.2.jsonl, ... for the runs of later rounds of scale.sh --repeat, whose steps are pooled),
train.log (its model-state bytes per rank) and plan.json (`trident plan --layout --json`).
Writes DIR/scaling.csv, DIR/scaling.md (the predicted-against-measured table) and
DIR/tokens_per_s.png, efficiency.png, memory.png,
predicted_vs_measured.png and scaling.png (all four in one figure), and for runs on emulated
nodes communication.png (rank 0's communication inside and across nodes). Prints the error
summary and, per rank count, the layout predicted fastest against the one measured fastest. Step times and tokens/s
are medians over the steps after the first (of every run of the layout), which pays for
warm-up; step_time_runs_s lists each run's own median; step_time_min_s is the
fastest of those steps, the least disturbed on a machine shared with other work, and
error_min_pct compares the prediction with it. Needs matplotlib for
the plots (Debian: python3-matplotlib); the CSV is written without it.
"""
import csv
import json
import re
import statistics
import sys
from pathlib import Path

RANK_LINE = re.compile(r"rank (\d+) \(dp (\d+) pp (\d+) tp (\d+)\): (\d+) / (\d+) / (\d+)")
COLUMNS = [
    "ranks", "nodes", "placement", "dp", "pp", "tp", "zero", "micro", "ckpt", "global_batch",
    "layout", "status", "load",
    "runs", "steps_measured", "tokens_per_s", "step_time_s", "step_time_min_s", "step_time_runs_s",
    "wait_dp_s", "wait_tp_s", "wait_pp_s", "wait_intra_node_s", "wait_inter_node_s",
    "predicted_step_time_s",
    "error_pct", "error_min_pct",
    "predicted_compute_s", "predicted_tp_s", "predicted_pp_s", "predicted_dp_s",
    "predicted_bubble_s", "predicted_optimizer_s",
    "measured_param_bytes", "measured_grad_bytes", "measured_optim_bytes",
    "predicted_param_bytes", "predicted_grad_bytes", "predicted_optim_bytes",
    "predicted_activation_bytes", "predicted_total_bytes", "memory_stage",
]


def read_metrics(paths):
    """Median step time and tokens/s over the steps after the first of each run of a layout
    (scale.sh --repeat runs it several times), and each run's own median."""
    later, per_run = [], []
    for path in paths:
        if not path.exists():
            continue
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        run = [r for r in rows if r["step"] > 1] or rows
        if run:
            later += run
            per_run.append(statistics.median(r["step_time_s"] for r in run))
    if not later:
        return None
    out = {
        "runs": len(per_run),
        "steps_measured": len(later),
        "step_time_s": statistics.median(r["step_time_s"] for r in later),
        "step_time_min_s": min(r["step_time_s"] for r in later),
        "step_time_runs_s": "/".join(f"{t:.4f}" for t in per_run),
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in later),
    }
    # Rank 0's communication per step by group, and split by whether the group spans nodes.
    for key, name in (("dp", "dp"), ("tp", "tp"), ("pp", "pp"), ("intra_node", "intra_node"),
                      ("inter_node", "inter_node")):
        if all(key in r.get("wait_s", {}) for r in later):
            out[f"wait_{name}_s"] = statistics.median(r["wait_s"][key] for r in later)
    return out


def read_states(path):
    """{(dp, pp, tp): (param, grad, optim) bytes} from the trainer's report."""
    out = {}
    if path.exists():
        for m in RANK_LINE.finditer(path.read_text()):
            dp, pp, tp = int(m[2]), int(m[3]), int(m[4])
            out[(dp, pp, tp)] = (int(m[5]), int(m[6]), int(m[7]))
    return out


def collect(directory):
    rows = []
    with open(directory / "runs.tsv") as f:
        runs = list(csv.DictReader(f, delimiter="\t"))
    # A layout run several times (scale.sh --repeat) is one row: its runs' steps pooled.
    repeats = {}
    for run in runs:
        repeats.setdefault(run["dir"], []).append(run)
    for layout_dir, its_runs in repeats.items():
        run = its_runs[0]
        run_dir = directory / layout_dir
        row = {k: run.get(k, "") for k in
               ("ranks", "dp", "pp", "tp", "zero", "micro", "ckpt", "layout", "load")}
        failed = [r["status"] for r in its_runs if r["status"] != "ok"]
        row["status"] = failed[0] if failed else "ok"
        row["nodes"] = run.get("nodes") or "1"
        row["placement"] = run.get("placement") or "block"
        row["global_batch"] = run["global"]
        metrics = read_metrics([run_dir / (f"metrics.{r['round']}.jsonl"
                                           if r.get("round", "1") not in ("", "1")
                                           else "metrics.jsonl") for r in its_runs])
        if metrics:
            row.update(metrics)
        plan_path = run_dir / "plan.json"
        if plan_path.exists() and plan_path.stat().st_size > 0:
            layout = json.loads(plan_path.read_text())["layouts"][0]
            t, mem = layout["time_s"], layout["memory_bytes"]
            row["predicted_step_time_s"] = t["total"]
            for part in ("compute", "tp", "pp", "dp", "bubble", "optimizer"):
                row[f"predicted_{part}_s"] = t[part]
            row["predicted_param_bytes"] = mem["parameters"]
            # trident's optimizer counts ZeRO-2's bucket buffers with the gradients.
            row["predicted_grad_bytes"] = mem["gradients"] + mem.get("bucket_buffers", 0)
            row["predicted_optim_bytes"] = mem["optimizer_states"]
            row["predicted_activation_bytes"] = mem["activations"]
            row["predicted_total_bytes"] = mem["total"]
            row["memory_stage"] = mem["stage"]
            states = read_states(run_dir / "train.log").get((0, mem["stage"], 0))
            if states:
                row["measured_param_bytes"], row["measured_grad_bytes"], row["measured_optim_bytes"] = states
        if "step_time_s" in row and "predicted_step_time_s" in row:
            row["error_pct"] = 100.0 * (row["predicted_step_time_s"] / row["step_time_s"] - 1)
            row["error_min_pct"] = 100.0 * (row["predicted_step_time_s"] / row["step_time_min_s"] - 1)
        rows.append(row)
    with open(directory / "scaling.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in COLUMNS})
    return rows


def family(row):
    """Runs of one layout family share pp, tp, zero, micro, ckpt and placement; dp varies."""
    return f"pp{row['pp']} tp{row['tp']} zero{row['zero']} mb{row['micro']}" + (
        " ckpt" if row["ckpt"] == "full" else "") + (
        " round robin" if row["placement"] == "cyclic" else "")


def tp_across(r):
    """Whether the run's tp groups span nodes: dealt round robin, or larger than a node."""
    nodes, tp = int(r["nodes"]), int(r["tp"])
    per_node = int(r["ranks"]) // nodes
    return nodes > 1 and tp > 1 and (r["placement"] == "cyclic" or tp > per_node)


def label(r):
    """'n2 r4: 2,1,2 z0' — nodes (when emulated), ranks, layout."""
    where = f"n{r['nodes']} " if int(r["nodes"]) > 1 or r["placement"] != "block" else ""
    return (f"{where}r{r['ranks']}: {r['dp']},{r['pp']},{r['tp']} z{r['zero']}"
            + (" ckpt" if r["ckpt"] == "full" else "")
            + (" tp-across" if tp_across(r) else ""))


def plot(directory, rows, strong):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if "step_time_s" in r]
    families = {}
    for r in done:
        families.setdefault(family(r), []).append(r)
    for runs in families.values():
        runs.sort(key=lambda r: int(r["ranks"]))
    kind = "strong" if strong else "weak"

    def tokens(ax):
        for name, runs in families.items():
            ax.plot([int(r["ranks"]) for r in runs], [r["tokens_per_s"] for r in runs], "o-", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks")
        ax.set_ylabel("tokens/s")
        ax.set_title(f"throughput ({kind} scaling)")
        ax.legend(fontsize=7)

    def efficiency(ax):
        for name, runs in families.items():
            base = runs[0]
            per_rank = base["tokens_per_s"] / int(base["ranks"])
            ax.plot([int(r["ranks"]) for r in runs],
                    [r["tokens_per_s"] / int(r["ranks"]) / per_rank for r in runs], "o-", label=name)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks")
        ax.set_ylabel("tokens/s per rank, relative to the fewest ranks")
        ax.set_title("scaling efficiency")
        ax.legend(fontsize=7)

    def memory(ax):
        shown = [r for r in done if "predicted_total_bytes" in r]
        labels = [f"{r['ranks']}: dp{r['dp']}pp{r['pp']}tp{r['tp']}z{r['zero']}"
                  + (" ckpt" if r["ckpt"] == "full" else "") for r in shown]
        bottom = [0.0] * len(shown)
        for key, name in (("measured_param_bytes", "parameters"), ("measured_grad_bytes", "gradients"),
                          ("measured_optim_bytes", "optimizer states"),
                          ("predicted_activation_bytes", "activations (predicted)")):
            values = [float(r.get(key, 0) or 0) / 1e6 for r in shown]
            ax.bar(range(len(shown)), values, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.plot(range(len(shown)), [float(r["predicted_total_bytes"]) / 1e6 for r in shown], "k_",
                markersize=14, label="predicted total")
        ax.set_xticks(range(len(shown)))
        ax.set_xticklabels(labels, rotation=70, fontsize=6)
        ax.set_ylabel("MB per rank (its pipeline stage with the most)")
        ax.set_title("memory per rank")
        ax.legend(fontsize=7)

    def predicted(ax):
        shown = [r for r in done if "predicted_step_time_s" in r]
        xs = [r["step_time_s"] for r in shown]
        ys = [r["predicted_step_time_s"] for r in shown]
        for r, x, y in zip(shown, xs, ys):
            fastest = r.get("step_time_min_s", x)
            ax.errorbar(x, y, xerr=[[x - fastest], [0]], fmt="o", capsize=2)
            ax.annotate(f"{r['ranks']}:{r['dp']},{r['pp']},{r['tp']},z{r['zero']}"
                        + ("c" if r["ckpt"] == "full" else ""), (x, y), fontsize=6)
        if xs:
            lows = [r.get("step_time_min_s", r["step_time_s"]) for r in shown]
            lo, hi = min(lows + ys) * 0.8, max(xs + ys) * 1.25
            ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("measured step time, s (median; bar: to the fastest step)")
        ax.set_ylabel("predicted step time, s")
        ax.set_title("planner against measurement")

    def communication(ax):
        shown = [r for r in done if "wait_intra_node_s" in r]
        bottom = [0.0] * len(shown)
        for key, name in (("wait_intra_node_s", "inside a node"),
                          ("wait_inter_node_s", "across nodes")):
            values = [r[key] / r["step_time_s"] for r in shown]
            ax.bar(range(len(shown)), values, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_xticks(range(len(shown)))
        ax.set_xticklabels([label(r) for r in shown], rotation=70, fontsize=6)
        ax.set_ylabel("rank 0's time in communication / step time")
        ax.set_title("communication (incl. pipeline waits) inside and across nodes")
        ax.legend(fontsize=7)

    drawers = {"tokens_per_s": tokens, "efficiency": efficiency, "memory": memory,
               "predicted_vs_measured": predicted}
    if any(int(r["nodes"]) > 1 for r in done):
        drawers["communication"] = communication
    for name, draw in drawers.items():
        fig, ax = plt.subplots(figsize=(6, 4.5))
        draw(ax)
        fig.tight_layout()
        fig.savefig(directory / f"{name}.png", dpi=110)
        plt.close(fig)
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    for ax, draw in zip(axes.flat, [tokens, efficiency, memory, predicted]):
        draw(ax)
    fig.tight_layout()
    fig.savefig(directory / "scaling.png", dpi=100)
    plt.close(fig)


def write_table(directory, rows):
    """DIR/scaling.md: the predicted-against-measured table, one row per run."""
    mb = lambda x: f"{x / 1e6:.2f}" if x != "" else ""
    nodes = any(int(r["nodes"]) > 1 for r in rows)
    head = "| ranks | nodes | ranks to nodes | tp | dp·pp·tp |" if nodes else "| ranks | dp·pp·tp |"
    runs = max((r.get("runs", 1) for r in rows), default=1)
    lines = [head + " ZeRO | ckpt | tokens/s | step, s (median / fastest"
             + (" (each run's median)" if runs > 1 else "") + ") | "
             "predicted, s | error |"
             + (" comm. inside / across nodes, s |" if nodes else "")
             + " params MB (meas / pred) | grads MB | optimizer MB |"]
    lines.append("|" + "---|" * (lines[0].count("|") - 1))
    for r in rows:
        if "step_time_s" not in r or "predicted_step_time_s" not in r:
            continue
        g = lambda k: r.get(k, "")
        where = (f"| {r['ranks']} | {r['nodes']} | "
                 f"{'round robin' if r['placement'] == 'cyclic' else 'in blocks'} | "
                 f"{'across nodes' if tp_across(r) else 'inside nodes' if int(r['tp']) > 1 else ''} |"
                 if nodes else f"| {r['ranks']} |")
        comm = (f" {r.get('wait_intra_node_s', 0):.4f} / {r.get('wait_inter_node_s', 0):.4f} |"
                if nodes else "")
        lines.append(
            f"{where} {r['dp']}·{r['pp']}·{r['tp']} | {r['zero']} | {r['ckpt']} | "
            f"{r['tokens_per_s']:.0f} | {r['step_time_s']:.4f} / {r['step_time_min_s']:.4f}"
            + (f" ({r['step_time_runs_s'].replace('/', ', ')})" if r.get("runs", 1) > 1 else "")
            + " | "
            f"{r['predicted_step_time_s']:.4f} | {r['error_pct']:+.1f}% |{comm} "
            f"{mb(g('measured_param_bytes'))} / {mb(g('predicted_param_bytes'))} | "
            f"{mb(g('measured_grad_bytes'))} / {mb(g('predicted_grad_bytes'))} | "
            f"{mb(g('measured_optim_bytes'))} / {mb(g('predicted_optim_bytes'))} |")
    (directory / "scaling.md").write_text("\n".join(lines) + "\n")


def ranking(rows):
    """Per rank count: the layout predicted fastest and the one measured fastest."""
    out = []
    by_ranks = {}
    for r in rows:
        if "step_time_s" in r and "predicted_step_time_s" in r:
            by_ranks.setdefault(int(r["ranks"]), []).append(r)
    for ranks, runs in sorted(by_ranks.items()):
        if len(runs) < 2:
            continue
        predicted = min(runs, key=lambda r: r["predicted_step_time_s"])
        measured = min(runs, key=lambda r: r["step_time_s"])
        out.append((ranks, label(predicted), label(measured), predicted is measured))
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    directory = Path(argv[1])
    rows = collect(directory)
    write_table(directory, rows)
    print(f"wrote {directory / 'scaling.csv'} and scaling.md ({len(rows)} runs)")
    for key, what in (("error_pct", "median step"), ("error_min_pct", "fastest step")):
        errors = [abs(r[key]) for r in rows if key in r]
        if errors:
            print(f"step time, predicted against the {what}: worst error {max(errors):.1f}%, "
                  f"median {statistics.median(errors):.1f}%")
    for ranks, predicted, measured, same in ranking(rows):
        print(f"{ranks} ranks: predicted fastest {predicted}; measured fastest {measured}"
              + ("" if same else "  <- differs"))
    try:
        plot(directory, rows, "--strong" in argv)
        print(f"wrote the plots in {directory}")
    except ImportError:
        print("matplotlib not found (Debian: apt-get install python3-matplotlib); no plots")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
