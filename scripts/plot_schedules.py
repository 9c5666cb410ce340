#!/usr/bin/python3
"""Draws pipeline schedules as timelines for docs/pipeline.md.

    scripts/plot_schedules.py BUILD_DIR [OUT_DIR]

Runs `trident schedule` for GPipe, 1F1B, interleaved 1F1B (v 2) and ZB-H1 at pp 4, m 8,
reads each stage's timeline row (the checker's simulation: forward 1, backward 2, a
split backward's halves 1 each) and draws one PNG per schedule in OUT_DIR
(docs/images by default): a bar per compute instruction, idle time left blank.
"""
import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCHEDULES = [  # file name, --schedule, extra arguments, title
    ("schedule_gpipe.png", "gpipe", [], "GPipe"),
    ("schedule_1f1b.png", "1f1b", [], "1F1B"),
    ("schedule_interleaved.png", "interleaved-1f1b", ["--virtual-stages", "2"],
     "interleaved 1F1B, 2 chunks per stage"),
    ("schedule_zb_h1.png", "zb-h1", [], "ZB-H1"),
]
COLORS = {"F": "#4c72b0", "B": "#dd8452", "BI": "#c44e52", "W": "#55a868"}
COSTS = {"F": 1.0, "B": 2.0, "BI": 1.0, "W": 1.0}  # trident schedule's defaults
TOKEN = re.compile(r"(BI|F|B|W)(\d+)(?:c(\d+))?")


def timeline(build, schedule, extra, pp=4, m=8):
    """(bars per stage as (start, length, kind, micro-batch, chunk), bubble line)."""
    out = subprocess.run([str(Path(build) / "trident"), "schedule", "--pp", str(pp),
                          "--micro-batches", str(m), "--schedule", schedule] + extra,
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    unit = int(re.search(r"timeline \((\d+) columns per forward-cost unit", out).group(1))
    bubble = re.search(r"bubble fraction: ([0-9.]+)", out).group(1)
    stages = []
    for row in re.findall(r"^  stage \d+ \|(.*)\|$", out, re.M):
        bars = []
        for match in TOKEN.finditer(row):
            # The default costs: a bar's length is its kind's, its start where its label is.
            kind = match.group(1)
            bars.append((match.start() / unit, COSTS[kind], kind, int(match.group(2)),
                         int(match.group(3) or 0)))
        stages.append(bars)
    return stages, bubble


def draw(stages, bubble, title, path):
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(stages) + 1.0))
    for s, bars in enumerate(stages):
        for start, length, kind, mb, chunk in bars:
            ax.barh(s, length, left=start, height=0.8, color=COLORS[kind],
                    alpha=1.0 if chunk == 0 else 0.55, edgecolor="white", linewidth=0.6)
            label = f"{kind}{mb}" + ("'" if chunk else "")
            ax.text(start + length / 2, s, label, ha="center", va="center", fontsize=6,
                    color="white")
    ax.set_yticks(range(len(stages)))
    ax.set_yticklabels([f"stage {s}" for s in range(len(stages))])
    ax.invert_yaxis()
    ax.set_xlabel("time (forward = 1)")
    ax.set_title(f"{title}: pp {len(stages)}, m 8, bubble {bubble}", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    out_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs/images"
    for name, schedule, extra, title in SCHEDULES:
        stages, bubble = timeline(build, schedule, extra)
        draw(stages, bubble, title, out_dir / name)
        print(f"wrote {out_dir / name} (bubble {bubble})")


if __name__ == "__main__":
    main()
