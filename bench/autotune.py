"""How close `trident train --auto`'s choice comes to the best configuration measured.

For each case (a model the calibration never timed, a rank count): calibrate the machine
with that many ranks, ask `trident plan --auto --top K` for its choice and its predicted
ranking, then train every configuration of the case's fixed grid (the grid is listed with
the case, and the choice need not be in it: it is added), two rounds in alternating
order, and report the choice's measured step against the best measured, whether the best
is in the predicted top 3, and the prediction's error on the choice.

  python3 bench/autotune.py BUILD [--cases NAME,...] [--rounds R] [--steps S]

Run it on an idle machine: other work on the cores shows up in every step time.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1")

# Each case: the model (config keys over configs/gpt2-124m.toml), the ranks, and the grid
# of (dp, pp, tp, zero, micro-batch, recomputation) measured.
CASES = {
    "gpt-6x384-seq128-2ranks": {
        "ranks": 2,
        "model": ["model.layers=6", "model.hidden=384", "model.heads=6", "model.seq_len=128",
                  "model.vocab=2048", "train.global_batch_size=16", "train.precision=fp32"],
        "grid": [(2, 1, 1, 1, 8, "none"), (2, 1, 1, 1, 4, "none"), (2, 1, 1, 2, 8, "none"),
                 (2, 1, 1, 1, 2, "none"), (2, 1, 1, 1, 1, "none"), (2, 1, 1, 3, 8, "none"),
                 (2, 1, 1, 1, 8, "full"), (1, 1, 2, 0, 8, "none"), (1, 1, 2, 0, 16, "none"),
                 (1, 2, 1, 0, 2, "none"), (1, 2, 1, 0, 4, "none")],
    },
    "llama-8x256-gqa-4ranks": {
        "ranks": 4,
        "model": ["model.arch=llama", "model.layers=8", "model.hidden=256", "model.heads=8",
                  "model.kv_heads=2", "model.ffn_hidden=704", "model.seq_len=128",
                  "model.vocab=2048", "train.global_batch_size=16", "train.precision=fp32"],
        "grid": [(4, 1, 1, 1, 1, "none"), (4, 1, 1, 1, 2, "none"), (4, 1, 1, 1, 4, "none"),
                 (4, 1, 1, 2, 4, "none"), (4, 1, 1, 3, 4, "none"), (4, 1, 1, 1, 4, "full"),
                 (2, 1, 2, 1, 4, "none"), (2, 1, 2, 1, 8, "none"), (2, 2, 1, 1, 2, "none"),
                 (2, 2, 1, 1, 4, "none"), (1, 4, 1, 0, 2, "none")],
    },
}


def name_of(c):
    dp, pp, tp, zero, mb, ckpt = c
    return "dp%d pp%d tp%d zero%d mb%d%s" % (dp, pp, tp, zero, mb, " ckpt" if ckpt == "full" else "")


def calibrate(build, ranks, out):
    subprocess.run(["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
                    str(build / "trident"), "calibrate", "--threads", "1", "--rounds", "1",
                    "--disk-dir", "none", "--out", str(out)],
                   env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def auto_ranking(build, case, cluster, top):
    """The choice and the predicted top `top`, as grid tuples."""
    cmd = [str(build / "trident"), "plan", str(ROOT / "configs/gpt2-124m.toml"), "--auto",
           "--devices", str(case["ranks"]), "--cluster", str(cluster), "--top", str(top)]
    for kv in case["model"]:
        cmd += ["--set", kv]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    ranked = []
    for m in re.finditer(r"^auto: #\d+ dp(\d+) pp(\d+) tp(\d+) zero(\d+) mb(\d+)( ckpt)?, "
                         r"in memory: predicted step ([\d.e+-]+) s", out, re.M):
        ranked.append(((int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]),
                        "full" if m[6] else "none"), float(m[7])))
    if not ranked:
        raise SystemExit("autotune: no ranking in `trident plan --auto`:\n" + out)
    return ranked


def step_time(build, case, c, steps, tmp):
    dp, pp, tp, zero, mb, ckpt = c
    metrics = tmp / ("%s.jsonl" % name_of(c).replace(" ", "_"))
    sets = case["model"] + [
        "parallel.dp=%d" % dp, "parallel.pp=%d" % pp, "parallel.tp=%d" % tp,
        "parallel.zero_stage=%d" % zero, "train.micro_batch_size=%d" % mb,
        "parallel.activation_checkpointing=%s" % ckpt, "train.steps=%d" % steps,
        "train.log_every=1", "train.threads=1", "logging.run_dir=none", 'checkpoint.dir=""',
        "logging.metrics=%s" % metrics]
    cmd = ["mpirun", "-np", str(case["ranks"]), "--oversubscribe", "--bind-to", "none",
           str(build / "trident"), "train", str(ROOT / "configs/gpt2-124m.toml")]
    for kv in sets:
        cmd += ["--set", kv]
    subprocess.run(cmd, env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return statistics.median(r["step_time_s"] for r in rows[2:])  # two warm-up steps dropped


def run_case(build, name, case, rounds, steps, tmp):
    cluster = tmp / ("%s.toml" % name)
    calibrate(build, case["ranks"], cluster)
    ranked = auto_ranking(build, case, cluster, 6)
    choice, predicted = ranked[0]
    grid = list(dict.fromkeys(case["grid"] + [choice]))
    times = {c: [] for c in grid}
    for r in range(rounds):
        for c in (grid if r % 2 == 0 else list(reversed(grid))):
            times[c].append(step_time(build, case, c, steps, tmp))
    measured = {c: statistics.median(t) for c, t in times.items()}
    best = min(measured, key=measured.get)
    top3 = [c for c, _ in ranked[:3]]
    print("%s: chose %s, predicted %.3f s, measured %.3f s (%+.1f%%); best measured %s %.3f s; "
          "the choice / the best = %.3f; the best in the predicted top 3: %s"
          % (name, name_of(choice), predicted, measured[choice],
             100 * (predicted / measured[choice] - 1), name_of(best), measured[best],
             measured[choice] / measured[best], "yes" if best in top3 else "no"))
    for c in sorted(measured, key=measured.get):
        print("   %-28s %.3f s  (rounds %s)" % (name_of(c), measured[c],
                                              ", ".join("%.3f" % t for t in times[c])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6)
    a = ap.parse_args()
    build = Path(a.build).resolve()
    with tempfile.TemporaryDirectory(prefix="trident-autotune-") as tmp:
        for name in a.cases.split(","):
            if name not in CASES:
                raise SystemExit("autotune: no case %r (cases: %s)" % (name, ", ".join(CASES)))
            run_case(build, name, CASES[name], a.rounds, a.steps, Path(tmp))


if __name__ == "__main__":
    main()
