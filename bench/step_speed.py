#!/usr/bin/env python3
"""trident's training step against the plain libtorch loop, checked against a recorded ratio.

    bench/step_speed.py BUILD_DIR [--rounds N] [--steps N] [--margin F] [--record]

Runs N alternated rounds (default 5) of the plain libtorch loop (bench/gpt_baseline.cpp)
and `trident train` at one rank, two intra-op threads each, on bench/performance.py's GPT
(hidden 768, 4 layers, 12 heads, sequence 256, GPT-2's vocabulary, micro-batch 4, fp32).
A round's ratio is trident's tokens/s over the loop's, each the median over the steps after
the first two; the two runs of a round go back to back, so a slow phase of a shared machine
falls on both. Prints every round, the median ratio and its range, and compares the median
with the figure in bench/results/step_speed.json: the exit status is 1 when it is more than
--margin (a fraction of the recorded ratio, default 0.05) below it. --record writes this
run's figures there instead. Run it on an otherwise idle machine.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import performance  # bench/performance.py: the GPT, both programs' command lines

RESULTS = Path(__file__).resolve().parent / "results" / "step_speed.json"
TARGET = 1.10  # trident's aim against the plain loop at one rank, two threads


def commit():
    out = subprocess.run(["git", "-C", str(performance.ROOT), "rev-parse", "--short", "HEAD"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return out.stdout.strip() or "unknown"


def blas_kernels(build):
    """OpenBLAS's kernel set, as bench/performance.py reads it (from matmul_ceiling, which
    scripts/bench.sh builds); said to be unknown without that program."""
    try:
        return performance.blas_core(build)
    except OSError:
        return "unknown (no matmul_ceiling in the build)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--record", action="store_true",
                    help=f"write this run's figures to {RESULTS.relative_to(performance.ROOT)}")
    a = ap.parse_args()
    if a.rounds < 1 or a.steps < 3:
        sys.exit("step_speed: --rounds must be at least 1 and --steps at least 3")
    bench = performance.Bench(a.build, a.steps)
    t0 = time.time()
    ratios, ours, theirs = bench.two_thread_rounds(a.rounds)
    ratio = performance.median(ratios)
    run = {
        "ratio": round(ratio, 4),
        "rounds": [round(r, 4) for r in ratios],
        "trident_tokens_per_s": round(performance.median(ours), 1),
        "baseline_tokens_per_s": round(performance.median(theirs), 1),
        "steps": a.steps,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "machine": f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
                   f"OpenBLAS kernels {blas_kernels(a.build)}",
        "load_average_at_end": round(os.getloadavg()[0], 2),
    }
    print(f"\ntrident 1 rank / plain libtorch loop, two threads each: median {ratio:.3f} "
          f"(rounds {min(ratios):.3f}-{max(ratios):.3f}: "
          f"{', '.join('%.3f' % r for r in ratios)}); {run['trident_tokens_per_s']:.0f} vs "
          f"{run['baseline_tokens_per_s']:.0f} tokens/s; aim >= {TARGET:.2f}; "
          f"{time.time() - t0:.0f} s")
    if a.record:
        RESULTS.write_text(json.dumps(run, indent=2) + "\n")
        print(f"recorded in {RESULTS}")
        return 0
    if not RESULTS.exists():
        sys.exit(f"step_speed: no recorded figure in {RESULTS}; run with --record first")
    recorded = json.loads(RESULTS.read_text())
    floor = recorded["ratio"] * (1 - a.margin)
    print(f"recorded {recorded['ratio']:.3f} on {recorded['date']} at {recorded['commit']} "
          f"(rounds {min(recorded['rounds']):.3f}-{max(recorded['rounds']):.3f}); "
          f"this run must reach {floor:.3f} (margin {a.margin:.0%})")
    if ratio < floor:
        print(f"step_speed: FAIL: the step slipped: {ratio:.3f} < {floor:.3f}", file=sys.stderr)
        return 1
    print("step_speed: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
