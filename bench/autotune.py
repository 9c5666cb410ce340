"""How close `trident train --auto`'s choice comes to the best configuration measured.

For each case (a model the calibration never timed, a rank count, emulated nodes or one
machine, a memory cap or none): calibrate the machine with that many ranks (the median of
--calibrate-rounds rounds of each figure), ask `trident plan --auto` for the choice and its
predicted ranking, then train every
configuration of the case's fixed grid (listed with the case) and of the predicted top 3
(added when they are not in it, so that every one of them is measured) for a few steps,
rounds in alternating order (round_order; with 2 rounds, a third for a configuration whose
two differ by more than 15%), the choice through `trident train --auto` itself; the near
ties are then settled (confirm_ties): every configuration within 5% of the best measured,
the best, the choice and the top 3's fastest train --confirm more rounds and are judged on
all of theirs, again while a configuration not yet confirmed becomes the best. Report the
choice's measured step against the best measured, whether the best is in the predicted
top 3 and how far the top 3's fastest is from it (and, where it is not, whether a rank-sum
test tells the best's rounds from those of the top 3's fastest), the predicted and measured
peak RSS of the choice, which configurations the memory cap killed, and what one launch
of `train --auto --measure K` (--measure, 3 by default) kept, judged on the grid's medians.
The Mixture-of-Experts cases' grids vary ep too (bench/results/autotune.md).

  python3 bench/autotune.py BUILD [--cases NAME,...] [--rounds R] [--steps S]
                                  [--bind core|none] [--confirm K] [--calibrate-rounds K]
                                  [--measure K] [--markdown FILE] [--results FILE]
                                  [--json FILE] [--from-json FILE | --confirm-from FILE]

--bind core (the default) launches every calibration and training with each rank bound to
one core, in turn (mpirun --bind-to core:overload-allowed; on emulated nodes, each node's
ranks in turn on the machine's cores): ranks that outnumber the cores then share them
evenly, as the planner assumes, rather than wherever the scheduler wakes them. --bind none
lets them move.

--markdown writes the results table into FILE between the markers <!-- autotune:begin -->
and <!-- autotune:end --> (docs/planner.md shows the latest run so). --results appends
the run, the table with the measured grids under a heading with the date and the code's
commit, to FILE (bench/results/autotune.md keeps every run). Run it on an idle machine:
other work on the cores shows up in every step time. Needs root for the memory cgroup
(v1, /sys/fs/cgroup/memory) of the capped cases and the namespaces of emulated nodes.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1")
CGROUP = Path("/sys/fs/cgroup/memory")

# Each case: the model (config keys over configs/gpt2-124m.toml), the ranks, emulated
# nodes (0: one machine), a memory cap for the whole job in GB (0: none), and the grid
# of configurations measured, named as trident names them.
CASES = {
    "gpt-6x384-seq128-2ranks": {
        "ranks": 2,
        "model": ["model.layers=6", "model.hidden=384", "model.heads=6", "model.seq_len=128",
                  "model.vocab=2048", "train.global_batch_size=16"],
        "grid": ["dp2 pp1 tp1 zero1 mb8", "dp2 pp1 tp1 zero1 mb4", "dp2 pp1 tp1 zero2 mb8",
                 "dp2 pp1 tp1 zero1 mb2", "dp2 pp1 tp1 zero3 mb8", "dp2 pp1 tp1 zero1 mb8 ckpt",
                 "dp2 pp1 tp1 zero1 mb8 selective", "dp1 pp1 tp2 zero0 mb8",
                 "dp1 pp1 tp2 zero0 mb8 sp", "dp1 pp2 tp1 zero0 mb4 1f1b",
                 "dp1 pp2 tp1 zero0 mb2 zb-h1"],
    },
    "llama-8x256-gqa-4ranks": {
        "ranks": 4,
        "model": ["model.arch=llama", "model.layers=8", "model.hidden=256", "model.heads=8",
                  "model.kv_heads=2", "model.ffn_hidden=704", "model.seq_len=128",
                  "model.vocab=2048", "train.global_batch_size=16"],
        "grid": ["dp4 pp1 tp1 zero1 mb1", "dp4 pp1 tp1 zero1 mb2", "dp4 pp1 tp1 zero1 mb4",
                 "dp4 pp1 tp1 zero2 mb4", "dp4 pp1 tp1 zero1 mb4 ckpt",
                 "dp4 pp1 tp1 zero1 mb4 selective", "dp2 pp1 tp2 zero1 mb4",
                 "dp2 pp1 tp2 zero1 mb8 sp", "dp2 pp2 tp1 zero1 mb4 1f1b",
                 "dp2 pp2 tp1 zero1 mb2 interleaved-1f1b v2", "dp1 pp4 tp1 zero0 mb2 1f1b"],
    },
    "gpt-4x256-seq256-vocab4096-8ranks": {
        "ranks": 8,
        "model": ["model.layers=4", "model.hidden=256", "model.heads=8", "model.seq_len=256",
                  "model.vocab=4096", "train.global_batch_size=16"],
        "grid": ["dp8 pp1 tp1 zero1 mb2", "dp8 pp1 tp1 zero1 mb1", "dp8 pp1 tp1 zero2 mb2",
                 "dp8 pp1 tp1 zero3 mb2", "dp8 pp1 tp1 zero1 mb2 selective",
                 "dp4 pp1 tp2 zero1 mb4", "dp4 pp2 tp1 zero1 mb2 1f1b",
                 "dp2 pp2 tp2 zero1 mb4 1f1b", "dp2 pp1 tp4 zero1 mb8",
                 "dp1 pp4 tp2 zero0 mb4 1f1b"],
    },
    "llama-4x384-seq64-vocab8192-2ranks": {
        "ranks": 2,
        "model": ["model.arch=llama", "model.layers=4", "model.hidden=384", "model.heads=6",
                  "model.kv_heads=3", "model.ffn_hidden=1024", "model.seq_len=64",
                  "model.vocab=8192", "train.global_batch_size=32"],
        "grid": ["dp2 pp1 tp1 zero1 mb16", "dp2 pp1 tp1 zero1 mb8", "dp2 pp1 tp1 zero1 mb4",
                 "dp2 pp1 tp1 zero2 mb16", "dp2 pp1 tp1 zero3 mb16",
                 "dp2 pp1 tp1 zero1 mb16 selective", "dp2 pp1 tp1 zero1 mb16 ckpt",
                 "dp2 pp1 tp1 zero0 mb16", "dp1 pp2 tp1 zero0 mb8 1f1b",
                 "dp1 pp2 tp1 zero0 mb4 zb-h1"],
    },
    "gpt-8x320-seq160-2x2nodes": {
        "ranks": 4, "nodes": 2,
        "model": ["model.layers=8", "model.hidden=320", "model.heads=5", "model.seq_len=160",
                  "model.vocab=1024", "train.global_batch_size=16"],
        "grid": ["dp4 pp1 tp1 zero1 mb4", "dp4 pp1 tp1 zero1 mb2", "dp4 pp1 tp1 zero2 mb4",
                 "dp4 pp1 tp1 zero0 mb4", "dp2 pp2 tp1 zero1 mb4 1f1b",
                 "dp2 pp2 tp1 zero1 mb2 zb-h1", "dp1 pp4 tp1 zero0 mb4 1f1b",
                 "dp1 pp4 tp1 zero0 mb2 1f1b", "dp4 pp1 tp1 zero1 mb4 ckpt"],
    },
    "llama-8x192-gqa-8ranks-4x2nodes": {
        "ranks": 8, "nodes": 4,
        "model": ["model.arch=llama", "model.layers=8", "model.hidden=192", "model.heads=6",
                  "model.kv_heads=2", "model.ffn_hidden=512", "model.seq_len=96",
                  "model.vocab=3072", "train.global_batch_size=32"],
        "grid": ["dp8 pp1 tp1 zero1 mb4", "dp8 pp1 tp1 zero1 mb2", "dp8 pp1 tp1 zero2 mb4",
                 "dp8 pp1 tp1 zero0 mb4", "dp4 pp2 tp1 zero1 mb4 1f1b",
                 "dp4 pp1 tp2 zero1 mb8", "dp2 pp4 tp1 zero1 mb4 1f1b",
                 "dp2 pp2 tp2 zero1 mb8 1f1b", "dp8 pp1 tp1 zero1 mb4 selective"],
    },
    "gpt-8x768-capped-2ranks": {
        "ranks": 2, "cap_gb": 1.5, "tier": True,
        "model": ["model.layers=8", "model.hidden=768", "model.heads=12", "model.seq_len=64",
                  "model.vocab=8192", "train.global_batch_size=8"],
        "grid": ["dp1 pp1 tp2 zero0 mb8 sp, in memory",
                 "dp1 pp1 tp2 zero0 mb8 sp, optimizer states in the nvme tier",
                 "dp1 pp1 tp2 zero0 mb4, optimizer states in the nvme tier",
                 "dp2 pp1 tp1 zero1 mb4, in memory",
                 "dp2 pp1 tp1 zero3 mb4, in memory",
                 "dp2 pp1 tp1 zero3 mb4, optimizer states and gradients in the nvme tier",
                 "dp2 pp1 tp1 zero3 mb4, everything in the nvme tier",
                 "dp2 pp1 tp1 zero2 mb4, optimizer states and gradients in the nvme tier",
                 "dp1 pp2 tp1 zero0 mb4 1f1b, in memory"],
    },
    "llama-6x640-capped-2ranks": {
        "ranks": 2, "cap_gb": 1.2, "tier": True,
        "model": ["model.arch=llama", "model.layers=6", "model.hidden=640", "model.heads=10",
                  "model.kv_heads=5", "model.ffn_hidden=1728", "model.seq_len=64",
                  "model.vocab=8192", "train.global_batch_size=8"],
        "grid": ["dp2 pp1 tp1 zero1 mb4, in memory",
                 "dp2 pp1 tp1 zero1 mb4, optimizer states in the nvme tier",
                 "dp2 pp1 tp1 zero3 mb4, in memory",
                 "dp2 pp1 tp1 zero3 mb4, optimizer states and gradients in the nvme tier",
                 "dp2 pp1 tp1 zero3 mb4, everything in the nvme tier",
                 "dp2 pp1 tp1 zero2 mb4 selective, optimizer states and gradients in the nvme tier",
                 "dp1 pp2 tp1 zero0 mb1 zb-h1, in memory",
                 "dp1 pp2 tp1 zero0 mb2 1f1b, in memory"],
    },
    # Mixture-of-Experts: layouts that differ in ep too (experts over ep dp ranks).
    "llama-moe-4x256-8experts-4ranks": {
        "ranks": 4,
        "model": ["model.arch=llama", "model.layers=4", "model.hidden=256", "model.heads=8",
                  "model.kv_heads=4", "model.ffn_hidden=512", "model.seq_len=128",
                  "model.vocab=2048", "train.global_batch_size=16", "model.moe_experts=8",
                  "model.moe_top_k=2", "model.moe_ffn_hidden=384"],
        "grid": ["dp4 pp1 tp1 zero1 mb4", "dp4 ep2 pp1 tp1 zero1 mb4", "dp4 ep4 pp1 tp1 zero1 mb4",
                 "dp4 ep4 pp1 tp1 zero1 mb2", "dp4 ep4 pp1 tp1 zero2 mb4",
                 "dp4 ep4 pp1 tp1 zero3 mb4", "dp2 ep2 pp1 tp2 zero1 mb8",
                 "dp2 ep2 pp2 tp1 zero1 mb4 1f1b", "dp1 pp4 tp1 zero0 mb4 1f1b",
                 "dp1 pp1 tp4 zero0 mb16"],
    },
    "llama-moe-4x192-16experts-2x2nodes": {
        "ranks": 4, "nodes": 2,
        "model": ["model.arch=llama", "model.layers=4", "model.hidden=192", "model.heads=6",
                  "model.kv_heads=2", "model.ffn_hidden=512", "model.seq_len=96",
                  "model.vocab=1024", "train.global_batch_size=16", "model.moe_experts=16",
                  "model.moe_top_k=2", "model.moe_ffn_hidden=256", "model.moe_layer_every=2",
                  "model.moe_shared_expert=true"],
        "grid": ["dp4 pp1 tp1 zero1 mb4", "dp4 ep2 pp1 tp1 zero1 mb4", "dp4 ep4 pp1 tp1 zero1 mb4",
                 "dp4 ep2 pp1 tp1 zero2 mb4", "dp2 ep2 pp2 tp1 zero1 mb4 1f1b",
                 "dp2 pp2 tp1 zero1 mb4 1f1b", "dp2 ep2 pp1 tp2 zero1 mb8",
                 "dp1 pp4 tp1 zero0 mb4 1f1b"],
    },
    "llama-moe-6x320-4experts-top1-2ranks": {
        "ranks": 2,
        "model": ["model.arch=llama", "model.layers=6", "model.hidden=320", "model.heads=4",
                  "model.kv_heads=2", "model.ffn_hidden=864", "model.seq_len=64",
                  "model.vocab=4096", "train.global_batch_size=16", "model.moe_experts=4",
                  "model.moe_top_k=1", "model.moe_ffn_hidden=640"],
        "grid": ["dp2 pp1 tp1 zero1 mb8", "dp2 pp1 tp1 zero1 mb4", "dp2 ep2 pp1 tp1 zero1 mb8",
                 "dp2 ep2 pp1 tp1 zero1 mb4", "dp2 ep2 pp1 tp1 zero2 mb8",
                 "dp2 ep2 pp1 tp1 zero3 mb8", "dp2 pp1 tp1 zero3 mb8",
                 "dp1 pp2 tp1 zero0 mb4 1f1b", "dp1 pp1 tp2 zero0 mb16"],
    },
}

NAME = re.compile(r"^dp(\d+)(?: cp(\d+))?(?: ep(\d+))? pp(\d+) tp(\d+) zero(\d+) mb(\d+)( ckpt)?( selective)?( sp)?"
                  r"(?: (1f1b|interleaved-1f1b|zb-h1|gpipe)(?: v(\d+))?)?(?:, (.+))?$")
PLACEMENTS = {"in memory": ("none", "none"),
              "optimizer states in the nvme tier": ("nvme", "none"),
              "optimizer states and gradients in the nvme tier": ("nvme", "none"),
              "everything in the nvme tier": ("nvme", "nvme")}


def canonical(name):
    """The name with its placement ("in memory" when none is given)."""
    return name if ", " in name else name + ", in memory"


def keys_of(name):
    m = NAME.match(canonical(name))
    if not m:
        raise SystemExit("autotune: cannot read the configuration %r" % name)
    dp, cp, ep, pp, tp, zero, mb = (int(m[i] or 1) for i in range(1, 8))
    recompute = "full" if m[8] else "selective" if m[9] else "none"
    opt, params = PLACEMENTS[m[13]]
    return ["parallel.dp=%d" % dp, "parallel.pp=%d" % pp, "parallel.tp=%d" % tp,
            "parallel.zero_stage=%d" % zero, "train.micro_batch_size=%d" % mb,
            "parallel.activation_checkpointing=%s" % recompute,
            "parallel.sequence_parallel=%s" % ("true" if m[10] else "false"),
            "parallel.schedule=%s" % (m[11] or "1f1b"), "parallel.virtual_stages=%s" % (m[12] or 1),
            "parallel.offload_optimizer=%s" % opt, "parallel.offload_params=%s" % params,
            "parallel.ep=%d" % ep, "parallel.cp=%d" % cp]


def short(name):
    """The name as the table shows it: the schedule only when it is not 1F1B's."""
    name = canonical(name)
    return name.replace(" 1f1b,", ",").replace(", in memory", "")


class Case:
    """A case's launcher: emulated nodes or one machine, inside its memory cgroup if capped."""

    def __init__(self, build, name, spec, tmp, bind):
        self.build, self.name, self.spec, self.tmp = build, name, spec, tmp
        # Each rank on one core, in turn (mapped by slot, ranks take the cores round robin),
        # or free to move.
        self.bind = (["--bind-to", "core:overload-allowed"] if bind == "core"
                     else ["--bind-to", "none"])
        self.cluster_name = "tat%d" % os.getpid()
        # The configurations the ranking predicts with train.allocator = release: they train
        # with it, as `train --auto` would run them.
        self.release = set()
        self.cgroup = None
        self.tier = tmp / ("tier-" + name)

    def __enter__(self):
        if self.spec.get("nodes"):
            subprocess.run([str(ROOT / "scripts/cluster.sh"), "up", "--name", self.cluster_name,
                            "--nodes", str(self.spec["nodes"]), "--slots",
                            str(self.spec["ranks"] // self.spec["nodes"]), "--link-rate", "1gbit"],
                           env=ENV, check=True, stdout=subprocess.DEVNULL)
        if self.spec.get("cap_gb"):
            self.cgroup = CGROUP / ("trident-autotune-%d" % os.getpid())
            self.cgroup.mkdir()
            (self.cgroup / "memory.limit_in_bytes").write_text(
                str(int(self.spec["cap_gb"] * 1e9)))
        if self.spec.get("tier"):
            self.tier.mkdir(exist_ok=True)
        return self

    def __exit__(self, *exc):
        if self.spec.get("nodes"):
            subprocess.run([str(ROOT / "scripts/cluster.sh"), "down", "--name", self.cluster_name],
                           env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.cgroup is not None:
            for _ in range(50):
                try:
                    self.cgroup.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        shutil.rmtree(self.tier, ignore_errors=True)

    def sets(self):
        out = list(self.spec["model"]) + ["train.precision=fp32", "train.threads=1"]
        if self.spec.get("tier"):
            out.append("parallel.nvme_path=%s" % self.tier)
        return out

    def mpirun(self, args, log):
        ranks = str(self.spec["ranks"])
        if self.spec.get("nodes"):
            cmd = [str(ROOT / "scripts/cluster.sh"), "run", "--name", self.cluster_name,
                   "-np", ranks] + self.bind + args
        else:
            cmd = ["mpirun", "-np", ranks, "--oversubscribe", "--map-by", "slot"] + self.bind + args
        if self.cgroup is not None:
            cmd = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.cgroup)] + cmd
        with open(log, "w") as out:
            return subprocess.run(cmd, env=ENV, stdout=out, stderr=subprocess.STDOUT).returncode

    def reset_cgroup_peak(self):
        """Starts the cap's own peak afresh (v1: writing 0 to memory.max_usage_in_bytes)."""
        if self.cgroup is not None:
            (self.cgroup / "memory.max_usage_in_bytes").write_text("0")

    def cgroup_peak(self):
        """The most memory the cgroup was charged since reset_cgroup_peak(), bytes: what the
        cap compares with, the node's ranks together, pages they share counted once; 0 when
        uncapped."""
        if self.cgroup is None:
            return 0
        return int((self.cgroup / "memory.max_usage_in_bytes").read_text())

    def memory_per_rank_gb(self):
        """What train --auto measures: the cap (or MemAvailable) shared by a node's ranks."""
        per_node = self.spec["ranks"] // max(1, self.spec.get("nodes", 1))
        if self.spec.get("cap_gb"):
            return self.spec["cap_gb"] / per_node
        avail = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemAvailable"))
        return avail * 1024 / 1e9 / self.spec["ranks"]


def calibrate(case, out, rounds):
    """The machine as the case's ranks see it: `trident calibrate`, the median of `rounds`
    rounds of each figure (one round's memory bandwidth has ranged 21-39 GB/s here)."""
    args = [str(case.build / "trident"), "calibrate", "--threads", "1", "--rounds", str(rounds),
            "--out", str(out), "--disk-dir", str(case.tier) if case.spec.get("tier") else "none"]
    if case.mpirun(args, case.tmp / "calibrate.log") != 0:
        raise SystemExit("autotune: calibrate failed:\n" + (case.tmp / "calibrate.log").read_text())


def auto_ranking(case, cluster, top, memory_gb):
    """The predicted top `top`: (name, predicted seconds, predicted peak bytes, whether the
    peak assumes train.allocator = release)."""
    cmd = [str(case.build / "trident"), "plan", str(ROOT / "configs/gpt2-124m.toml"), "--auto",
           "--devices", str(case.spec["ranks"]), "--cluster", str(cluster), "--top", str(top),
           "--memory-per-rank", "%.4f" % memory_gb]
    for kv in case.sets():
        cmd += ["--set", kv]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    ranked = []
    for m in re.finditer(r"^auto: #\d+ (.+?): predicted step ([\d.e+-]+) s, peak ([\d.]+) (GB|MB)"
                         r"( with train.allocator = release)?$", out, re.M):
        ranked.append((canonical(m[1]), float(m[2]), float(m[3]) * (1e9 if m[4] == "GB" else 1e6),
                       bool(m[5])))
    if not ranked:
        raise SystemExit("autotune: no ranking in `trident plan --auto`:\n" + out)
    return ranked, out


def auto_args(case, cluster):
    """`train --auto`'s arguments: the calibration, and uncapped the memory per rank, as
    train --auto measures it (under a cap, it reads the cap itself)."""
    args = ["--auto", "--cluster", str(cluster)]
    if not case.spec.get("cap_gb"):
        args += ["--memory-per-rank", "%.4f" % case.memory_per_rank_gb()]
    return args


def train(case, name, steps, cluster, auto):
    """(median step after the first two, peak RSS of rank 0, the cgroup's peak) or None
    when killed."""
    tag = re.sub(r"[^a-z0-9]+", "_", name)
    metrics = case.tmp / ("%s.jsonl" % tag)
    if metrics.exists():
        metrics.unlink()
    sets = case.sets() + ["train.steps=%d" % steps, "train.log_every=1", "logging.run_dir=none",
                          'checkpoint.dir=""', "logging.metrics=%s" % metrics]
    args = [str(case.build / "trident"), "train", str(ROOT / "configs/gpt2-124m.toml")]
    if auto:
        args += auto_args(case, cluster)
    else:
        sets += keys_of(name)
        if name in case.release:
            sets.append("train.allocator=release")
    for kv in sets:
        args += ["--set", kv]
    log = case.tmp / ("%s.log" % tag)
    case.reset_cgroup_peak()
    if case.mpirun(args, log) != 0:
        text = log.read_text()
        if "trident: error" in text:  # the config refuses it: a mistake in the grid
            raise SystemExit("autotune: %s refused:\n%s" % (name, text[-2000:]))
        return None, text[-2000:]
    text = log.read_text()
    if auto:
        chose = re.search(r"^auto: chose (.+?): predicted", text, re.M)
        if not chose or canonical(chose[1]) != name:
            raise SystemExit("autotune: train --auto chose %s, plan --auto %s" %
                             (chose and chose[1], name))
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return (statistics.median(r["step_time_s"] for r in rows[2:]),
            max(r.get("peak_rss_bytes", 0) for r in rows), case.cgroup_peak()), ""


def measured_pick(case, k, cluster):
    """`train --auto --measure k` launched once: {"k", "picked": the configuration it
    trained, "timings": {name: its seconds a step in the measurement}}, or {"k", "failed":
    the end of its log}."""
    sets = case.sets() + ["train.steps=1", "logging.run_dir=none", 'checkpoint.dir=""']
    args = [str(case.build / "trident"), "train", str(ROOT / "configs/gpt2-124m.toml"),
            "--measure", str(k)] + auto_args(case, cluster)
    for kv in sets:
        args += ["--set", kv]
    log = case.tmp / "measure.log"
    if case.mpirun(args, log) != 0:
        return {"k": k, "failed": log.read_text()[-2000:]}
    return read_pick(log.read_text(), k)


def read_pick(text, k):
    """What `train --auto --measure k` printed: its timings and the one it kept."""
    timings = [(canonical(m[1]), float(m[2])) for m in
               re.finditer(r"^auto: measured #\d+ (.+?): ([\d.]+) s a step", text, re.M)]
    chose = re.search(r"^auto: chose #(\d+), the fastest measured of", text, re.M)
    if len(timings) != k or not chose:
        raise SystemExit("autotune: train --auto --measure %d printed no pick:\n%s" % (k, text[-2000:]))
    return {"k": k, "picked": timings[int(chose[1]) - 1][0], "timings": dict(timings)}


def check_grid(build, name, spec):
    """Every configuration of the grid passes `trident check` (a mistake in the grid, not a
    measurement, if not): checked before anything is measured."""
    for g in spec["grid"]:
        cmd = [str(build / "trident"), "check", str(ROOT / "configs/gpt2-124m.toml"),
               "--world", str(spec["ranks"])]
        tier = ["parallel.nvme_path=%s" % tempfile.gettempdir()] if spec.get("tier") else []
        for kv in spec["model"] + ["train.precision=fp32"] + tier + keys_of(g):
            cmd += ["--set", kv]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if out.returncode != 0:
            raise SystemExit("autotune: %s: the grid's %s is refused:\n%s" %
                             (name, g, out.stdout[-1500:]))


def round_order(grid, r):
    """Round r's order: the grid, and every other round the grid reversed in two halves
    (the first half backwards, then the second). Within a half this cancels a steady drift,
    as plain alternation does; the halves keep the configurations that end one round from
    starting the next, so a slow spell across the boundary does not disturb the same ones
    in both rounds."""
    if r % 2 == 0:
        return list(grid)
    half = len(grid) // 2
    return list(reversed(grid[:half])) + list(reversed(grid[half:]))


# Two rounds of one configuration further apart than this ratio get a third.
DISAGREE = 1.15


def run_case(build, name, spec, rounds, steps, bind, confirm, calibrate_rounds, measure_k, tmp):
    with Case(build, name, spec, tmp, bind) as case:
        cluster = tmp / ("%s.toml" % name)
        calibrate(case, cluster, calibrate_rounds)
        cluster_text = cluster.read_text()
        memory = case.memory_per_rank_gb()
        # The whole ranking: every candidate under the budget, for the grid's predictions.
        ranked, plan_text = auto_ranking(case, cluster, 100000, memory)
        choice, predicted, predicted_peak, _ = ranked[0]
        predictions = {n: (t, p) for n, t, p, _ in ranked}
        # The predicted top 3 are measured too: whether the best is among them is judged
        # on measurements of all three, not on the grid's alone.
        top3 = [c for c, _, _, _ in ranked[:3]]
        grid = list(dict.fromkeys([canonical(g) for g in spec["grid"]] + top3))
        case.release = {n for n, _, _, release in ranked if release and n in grid}
        r = {"case": name, "spec": spec, "memory_gb": memory, "choice": choice,
             # The calibration, so that a later model can rank the same measurements again.
             "cluster": cluster_text,
             "predicted": predicted, "predicted_peak": predicted_peak,
             "times": {c: [] for c in grid}, "peaks": {c: 0 for c in grid},
             "cgroup_peaks": {c: 0 for c in grid}, "killed": [], "top3": top3,
             "predicted_grid": {c: predictions[c] for c in grid if c in predictions},
             "release": sorted(case.release),
             # How it was measured, so that --from-json renders the run's own header.
             "date": str(datetime.date.today()), "code": code_version(),
             "rounds": rounds, "steps": steps,
             "bind": bind, "calibrate_rounds": calibrate_rounds}
        killed = {}
        for k in range(rounds):
            measure(case, r, round_order(grid, k), steps, cluster, killed)
        if rounds == 2:
            # Two rounds that disagree by more than the machine's own spread (about 15%)
            # mean one was disturbed: a third round, in the first round's order, makes the
            # median that of the two that agree.
            measure(case, r, [c for c in grid if len(r["times"][c]) == 2 and
                              max(r["times"][c]) > DISAGREE * min(r["times"][c])],
                    steps, cluster, killed)
        if choice in killed:
            raise SystemExit("autotune: %s: the choice %s failed:\n%s" % (name, choice, killed[choice]))
        judge(r)
        confirm_ties(case, r, confirm, steps, cluster)
        if measure_k:
            # Last, so that its pick is judged on the grid's medians, which hold the
            # predicted top 3 (hence measure_k <= 3).
            r["measure"] = measured_pick(case, measure_k, cluster)
    return r


def measure(case, r, order, steps, cluster, killed):
    """Trains each configuration of `order` once, adding its time and peaks to r."""
    for c in order:
        if c in killed:
            continue
        result, why = train(case, c, steps, cluster, auto=(c == r["choice"]))
        if result is None:
            killed[c] = why
            r["killed"] = sorted(killed)
            continue
        r["times"][c].append(result[0])
        r["peaks"][c] = max(r["peaks"][c], result[1])
        r["cgroup_peaks"][c] = max(r["cgroup_peaks"][c], result[2])


def top3_fastest(r):
    """The predicted top 3's fastest measured configuration (None when none was measured)."""
    return min((c for c in r["top3"] if c in r["measured"]), key=r["measured"].get,
               default=None)


def judge(r):
    """The medians over each configuration's rounds, the best, and the choice and the top 3
    against it."""
    measured = {c: statistics.median(t) for c, t in r["times"].items()
                if t and c not in r["killed"]}
    best = min(measured, key=measured.get)
    r.update({"measured": measured, "best": best, "in_top3": best in r["top3"],
              "ratio": measured[r["choice"]] / measured[best]})
    # How far the top 3's fastest is from the best: 1 when the best is among them.
    fastest = top3_fastest(r)
    r["top3_ratio"] = (measured[fastest] if fastest else float("inf")) / measured[best]


def confirm_ties(case, r, rounds, steps, cluster):
    """The fastest of a dozen noisy medians is biased towards a lucky configuration, and a
    median of three rounds moves by a few percent: the near ties are settled by more rounds.
    Every configuration within NEAR of the best measured (the choice among them or not), the
    best, the choice and, where the best is not in the predicted top 3, the top 3's fastest
    train `rounds` more rounds, alternating their order, and are judged again on all their
    rounds. While the best is then one not yet confirmed (the next luckiest), it and the
    configurations newly within NEAR of it train `rounds` more beside the choice, until the
    best has had its rounds more: every pass confirms at least one configuration, so at
    worst the whole grid trains `rounds` more. The judgement before is kept
    (r["before_confirm"])."""
    if rounds <= 0:
        return
    confirmed = list(r.get("confirmed", []))
    killed = dict.fromkeys(r["killed"], "")
    passes = 0
    while True:
        near = [c for c in sorted(r["measured"], key=r["measured"].get)
                if r["measured"][c] <= NEAR * r["measured"][r["best"]]]
        if r["best"] in confirmed or (r["best"] == r["choice"] and len(near) == 1):
            break
        wanted = list(near)  # the best among them
        if not r["in_top3"] and top3_fastest(r):
            wanted.append(top3_fastest(r))
        new = [c for c in dict.fromkeys(wanted) if c not in confirmed]
        # The choice trains in every pass, beside the newcomers: a slow spell then falls
        # on both, never on one configuration's rounds alone.
        group = list(dict.fromkeys(new + [r["choice"]]))
        if "before_confirm" not in r:
            r["before_confirm"] = {k: r[k] for k in ("best", "in_top3", "top3_ratio", "ratio")}
        confirmed += [c for c in group if c not in confirmed]
        r["confirmed"], r["confirm_rounds"], r["near"] = confirmed, rounds, NEAR
        for k in range(rounds):
            measure(case, r, group[::-1] if k % 2 == 0 else group, steps, cluster, killed)
        judge(r)
        passes += 1
    if passes:
        r["confirm_passes"] = r.get("confirm_passes", 0) + passes


# A configuration whose median is within this ratio of the best's is a near tie: medians of
# three rounds on this machine move by about as much (rounds of one configuration 10-30%
# apart), so which of them is the best is settled by more rounds.
NEAR = 1.05


def confirm_stored(build, stored, rounds, steps, bind, tmp):
    """The confirmation on results measured before it existed: the case's stored
    calibration and measurements, the contenders trained again here."""
    r = dict(stored)
    with Case(build, r["case"], r["spec"], tmp, bind) as case:
        case.release = set(r.get("release", []))
        cluster = tmp / ("%s.toml" % r["case"])
        cluster.write_text(r["cluster"])
        confirm_ties(case, r, rounds, steps, cluster)
    return r


def describe(spec):
    keys = dict(kv.split("=", 1) for kv in spec["model"])
    arch = "Llama" if keys.get("model.arch") == "llama" else "GPT"
    heads = keys["model.heads"] + ("/" + keys["model.kv_heads"] if "model.kv_heads" in keys else "")
    where = ("%d emulated nodes" % spec["nodes"]) if spec.get("nodes") else "one node"
    cap = (", cap %.1f GB" % spec["cap_gb"]) if spec.get("cap_gb") else ""
    moe = ""
    if "model.moe_experts" in keys:
        every = keys.get("model.moe_layer_every", "1")
        moe = ", %s experts top %s%s%s" % (
            keys["model.moe_experts"], keys.get("model.moe_top_k", "2"),
            "" if every == "1" else " every %s layers" % every,
            " + shared" if keys.get("model.moe_shared_expert") == "true" else "")
    return "%s %s × %s%s, heads %s, seq %s, vocab %s, batch %s; %d ranks, %s%s" % (
        arch, keys["model.layers"], keys["model.hidden"], moe, heads, keys["model.seq_len"],
        keys["model.vocab"], keys["train.global_batch_size"], spec["ranks"], where, cap)


def in_top3(r):
    """"yes", or "no" with how much slower the predicted top 3's fastest measured than the
    best (results from before the top 3 were all measured lack the figure)."""
    if r["in_top3"]:
        return "yes"
    return "no (%.3f)" % r["top3_ratio"] if "top3_ratio" in r else "no"


def rank_sum_p(a, b):
    """The two-sided p-value of the rank-sum (Mann-Whitney) test that rounds `a` and `b` come
    from one distribution: over every way of dealing the pooled rounds into groups of their
    sizes, the share whose rank sum lies at least as far from its mean as the observed one
    (exact, tied rounds at their mean rank; counted by the rank sums of a's size, not by
    listing the deals). With 3 rounds against 3 it cannot fall below 0.1, with 8 against 8
    it can reach 0.0002."""
    pooled = sorted(list(a) + list(b))
    twice = {}  # each value's mean rank, doubled so that every rank sum is an integer
    i = 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j] == pooled[i]:
            j += 1
        twice[pooled[i]] = i + j + 1  # ranks i + 1 .. j
        i = j
    ranks, n = [twice[v] for v in list(a) + list(b)], len(a)
    ways = [{} for _ in range(n + 1)]  # ways[k][s]: subsets of k ranks summing to s
    ways[0][0] = 1
    for r in ranks:
        for k in range(n - 1, -1, -1):
            for s, w in ways[k].items():
                ways[k + 1][s + r] = ways[k + 1].get(s + r, 0) + w
    middle = n * (len(pooled) + 1)  # twice the mean rank sum of n rounds
    observed = abs(sum(ranks[:n]) - middle)
    deals = sum(ways[n].values())
    return sum(w for s, w in ways[n].items() if abs(s - middle) >= observed) / deals


def misses_told_apart(results):
    """For each case whose measured best is outside the predicted top 3, the rank-sum test's
    p-value between the best's rounds and those of the top 3's fastest."""
    return [rank_sum_p(r["times"][r["best"]], r["times"][top3_fastest(r)])
            for r in results if not r["in_top3"] and top3_fastest(r)]


def measure_summary(results):
    """For the cases whose `train --auto --measure K` launch picked a configuration the
    grid measured: (cases, K, picks of the predicted #1, picks of the measured best, their
    pick / best by the grid's medians, sorted), or None when none did."""
    picks = [r for r in results
             if "picked" in r.get("measure", {}) and r["measure"]["picked"] in r["measured"]]
    if not picks:
        return None
    ratios = sorted(r["measured"][r["measure"]["picked"]] / r["measured"][r["best"]]
                    for r in picks)
    return (len(picks), "/".join(sorted({str(r["measure"]["k"]) for r in picks})),
            sum(r["measure"]["picked"] == r["choice"] for r in picks),
            sum(r["measure"]["picked"] == r["best"] for r in picks), ratios)


def within_budget(r):
    """(choice / the fastest measured among the configurations predicted to fit the budget,
    whether that one is in the predicted top 3), or None for results without predictions."""
    predicted = r.get("predicted_grid")
    if not predicted:
        return None
    fits = {c: t for c, t in r["measured"].items() if c in predicted}
    best = min(fits, key=fits.get)
    return r["measured"][r["choice"]] / fits[best], best in r["top3"]


def measured_how(results, rounds, steps, bind):
    """The date, rounds, steps and binding the results were measured with (the arguments'
    where the results do not record them, as before they did, or disagree; results from
    before the binding was recorded ran unbound)."""
    def agreed(key, given, recorded_default=None):
        values = {r.get(key, given if recorded_default is None else recorded_default)
                  for r in results}
        return values.pop() if len(values) == 1 else given
    return (agreed("date", str(datetime.date.today())), agreed("rounds", rounds),
            agreed("steps", steps), agreed("bind", bind, "none"))


def calibration(r):
    """ (the case's calibration in the figures that move most between calibrations)", or
    nothing for results that did not record it."""
    if "cluster" not in r:
        return ""
    c = tomllib.loads(r["cluster"])
    return " (calibrated %.1f GB/s of memory bandwidth, %.0f µs a layer)" % (
        c.get("memory_gbps", 0), c.get("layer_overhead_us", 0))


def markdown(results, rounds, steps, bind, grids=True):
    date, rounds, steps, bind = measured_how(results, rounds, steps, bind)
    third = (", a third for a configuration whose two differ by over 15%" if rounds == 2 else "")
    how = ("each rank bound to one core in turn, calibration too" if bind == "core"
           else "ranks free to move between cores")
    # Results from before the rounds were recorded calibrated with one.
    calibrations = {r.get("calibrate_rounds", 1) for r in results}
    how += "; every case calibrated anew, %s" % (
        "one round" if calibrations == {1} else "the median of %s rounds of each figure"
        % "/".join(str(k) for k in sorted(calibrations)))
    confirm = {r["confirm_rounds"] for r in results if "confirm_rounds" in r}
    if confirm and any("near" in r for r in results):
        how += ("; the near ties settled: every configuration within %.0f%% of the best, the "
                "best, the choice and the top 3's fastest %s rounds more, again while a new "
                "best appeared" % ((max(r.get("near", NEAR) for r in results) - 1) * 100,
                                   "/".join(str(k) for k in sorted(confirm))))
    elif confirm:
        how += ("; where the best was not the choice, the best, the choice and the top 3's "
                "fastest %s rounds more" % "/".join(str(k) for k in sorted(confirm)))
    lines = ["Measured %s by `scripts/autotune-check.sh` (%d rounds of %d steps%s, the median "
             "step after the first two, per configuration; the grid and the predicted top 3; "
             "%s):" % (date, rounds, steps, third, how),
             "",
             "| case | choice | predicted | measured | measured best | choice / best | best in top 3 "
             "(top 3's fastest / best) | peak RSS predicted / measured | killed by the cap |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append("| %s | %s | %.3f s | %.3f s | %s, %.3f s | %.3f | %s | %.0f / %.0f MB | %s |" % (
            describe(r["spec"]), short(r["choice"]), r["predicted"], r["measured"][r["choice"]],
            "the choice" if r["best"] == r["choice"] else short(r["best"]),
            r["measured"][r["best"]], r["ratio"], in_top3(r),
            r["predicted_peak"] / 1e6, r["peaks"][r["choice"]] / 1e6,
            ", ".join(short(k) for k in r["killed"]) or "none"))
    ratios = sorted(r["ratio"] for r in results)
    top3 = sorted(r["top3_ratio"] for r in results if "top3_ratio" in r)
    worst_top3 = ("; the top 3's fastest at worst %.3f × the best" % top3[-1]
                  if len(top3) == len(results) else "")
    lines += ["", "Choice / best: median %.3f, worst %.3f over %d cases; the measured best in the "
              "predicted top 3 in %d of %d%s." % (statistics.median(ratios), ratios[-1], len(results),
                                                  sum(r["in_top3"] for r in results), len(results),
                                                  worst_top3)]
    misses = misses_told_apart(results)
    if misses:
        lines += ["", "Where the best is outside the top 3, its rounds and those of the top 3's "
                  "fastest, by a two-sided rank-sum test: p = %s (below 0.05, told apart, in %d "
                  "of %d)." % (", ".join("%.2f" % p for p in misses),
                               sum(p < 0.05 for p in misses), len(misses))]
    before = [r.get("before_confirm", r) for r in results]
    if any("before_confirm" in r for r in results):
        ratios = sorted(b["ratio"] for b in before)
        lines += ["", "Before the rounds more: median %.3f, worst %.3f; the measured best in the "
                  "predicted top 3 in %d of %d." % (statistics.median(ratios), ratios[-1],
                                                     sum(b["in_top3"] for b in before),
                                                     len(results))]
    picked = measure_summary(results)
    if picked:
        n, k, first, best, ratios = picked
        lines += ["", "`train --auto --measure %s`, launched once a case after its grid (each of "
                  "the predicted top %s trained in two passes of alternating order in one "
                  "process, the fastest kept): it kept the predicted #1 in %d of %d "
                  "cases and the measured best in %d; its pick / best by the grid's medians: "
                  "median %.3f, worst %.3f." % (
                      k, k, first, n, best, statistics.median(ratios), ratios[-1])]
    admitted = [within_budget(r) for r in results]
    if all(a is not None for a in admitted) and \
            any(r["best"] not in r["predicted_grid"] for r in results):
        ratios = sorted(a[0] for a in admitted)
        lines += ["", "Against the fastest configuration predicted to fit the budget (a measured "
                  "best predicted over it is one the planner's margin rules out): median %.3f, "
                  "worst %.3f; in the predicted top 3 in %d of %d." % (
                      statistics.median(ratios), ratios[-1], sum(a[1] for a in admitted),
                      len(results))]
    if not grids:
        return "\n".join(lines)
    lines += ["", "<details><summary>The measured grids</summary>", ""]
    for r in results:
        lines.append("%s%s:" % (r["case"], calibration(r)))
        lines.append("")
        predicted = r.get("predicted_grid", {})
        for c in sorted(r["measured"], key=r["measured"].get):
            guess = ("predicted %.3f s" % predicted[c][0]) if c in predicted else \
                "over the budget"
            if c in r.get("release", []):
                guess += ", with train.allocator = release"
            # Capped: rank 0's peak RSS and the cgroup's (the node's ranks together).
            cgroup = r.get("cgroup_peaks", {}).get(c, 0)
            memory = ("; peak RSS %.0f MB, the cgroup's %.0f MB" % (r["peaks"][c] / 1e6, cgroup / 1e6)
                      if cgroup else "")
            lines.append("    %-62s %.3f s  (rounds %s; %s%s)%s" % (
                short(c), r["measured"][c], ", ".join("%.3f" % t for t in r["times"][c]),
                guess, memory, "  <- the choice" if c == r["choice"] else
                "  <- predicted #%d" % (r["top3"].index(c) + 1) if c in r.get("top3", []) else ""))
        m = r.get("measure")
        if m and "picked" in m:
            lines.append("    train --auto --measure %d kept %s (its timings: %s)" % (
                m["k"], short(m["picked"]),
                ", ".join("%s %.3f s" % (short(c), t) for c, t in m["timings"].items())))
        elif m:
            lines.append("    train --auto --measure %d failed" % m["k"])
        for c in r["killed"]:
            lines.append("    %-62s killed by the cap%s" % (
                short(c), "" if c not in predicted else
                " (predicted to fit: %.0f MB)" % (predicted[c][1] / 1e6)))
        lines.append("")
    lines.append("</details>")
    return "\n".join(lines)


def write_markdown(path, text):
    doc = Path(path).read_text()
    begin, end = "<!-- autotune:begin -->", "<!-- autotune:end -->"
    if begin not in doc or end not in doc:
        raise SystemExit("autotune: %s has no %s ... %s markers" % (path, begin, end))
    head, rest = doc.split(begin, 1)
    tail = rest.split(end, 1)[1]
    Path(path).write_text(head + begin + "\n" + text + "\n" + end + tail)


def code_version():
    """The commit the run measured, marked when the work tree differs from it."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD"]).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown code"
    return "code %s%s" % (head, " with uncommitted changes" if dirty else "")


def append_results(path, results, text):
    """Appends one run to the results file: a heading (date, code, cases), then `text`."""
    # Stored results name the code they measured; older ones, and a new run, today's.
    date = results[0].get("date", str(datetime.date.today())) if results else ""
    code = results[0].get("code", code_version()) if results else code_version()
    heading = "### %s, %s: %s" % (date, code, ", ".join(r["case"] for r in results))
    path = Path(path)
    if not path.exists():
        path.write_text("# Held-out validation of `trident train --auto`: the runs\n\n"
                        "## Runs recorded by bench/autotune.py\n")
    with path.open("a") as f:
        f.write("\n%s\n\n%s\n" % (heading, text))


def report(r, seconds):
    print("%s (%.0f s): chose %s, predicted %.3f s, measured %.3f s; best %s %.3f s; "
          "choice / best %.3f; best in the predicted top 3: %s; peak %.0f / %.0f MB; "
          "killed: %s%s" % (r["case"], seconds, short(r["choice"]), r["predicted"],
                            r["measured"][r["choice"]], short(r["best"]), r["measured"][r["best"]],
                            r["ratio"], in_top3(r), r["predicted_peak"] / 1e6,
                            r["peaks"][r["choice"]] / 1e6, ", ".join(r["killed"]) or "none",
                            "; confirmed: %s" % ", ".join(short(c) for c in r["confirmed"])
                            if "confirmed" in r else ""), flush=True)
    m = r.get("measure")
    if m:
        print("%s: train --auto --measure %d %s" % (
            r["case"], m["k"], "kept " + short(m["picked"]) if "picked" in m else
            "failed:\n" + m["failed"]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--bind", choices=["core", "none"], default="core",
                    help="each rank bound to one core in turn (default), or free to move")
    ap.add_argument("--confirm", type=int, default=3,
                    help="rounds more for the near ties: every configuration within 5%% of "
                         "the best, the best, the choice and the top 3's fastest (0: none)")
    ap.add_argument("--calibrate-rounds", type=int, default=3,
                    help="rounds of each case's calibration, the median of each figure kept")
    ap.add_argument("--measure", type=int, default=3, choices=range(0, 4),
                    help="after each case's grid, launch train --auto --measure K once and "
                         "judge its pick on the grid's medians (0: not; at most 3, the "
                         "predicted top 3 the grid holds)")
    ap.add_argument("--markdown", help="write the table (no grids) between the autotune "
                    "markers of this file")
    ap.add_argument("--results", help="append the run, with its grids, to this file")
    ap.add_argument("--json", help="also write the results as JSON to this file")
    ap.add_argument("--from-json", help="measure nothing: render these results (A.json,B.json)")
    ap.add_argument("--confirm-from", help="run only the confirmation rounds, on these stored "
                    "results (their calibrations), and render them")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    results = []
    if a.from_json or a.confirm_from:
        for path in (a.from_json or a.confirm_from).split(","):
            results += json.loads(Path(path).read_text())
        order = [n for n in a.cases.split(",")]
        results.sort(key=lambda r: order.index(r["case"]) if r["case"] in order else len(order))
        if a.confirm_from:
            with tempfile.TemporaryDirectory(prefix="trident-autotune-") as tmp:
                for i, r in enumerate(results):
                    if r["case"] not in order:
                        continue
                    results[i] = confirm_stored(build, r, a.confirm, r.get("steps", a.steps),
                                                r.get("bind", "none"), Path(tmp))
                    report(results[i], 0)
                    if a.json:
                        Path(a.json).write_text(json.dumps(results, indent=1, default=str))
        publish(a, results)
        return
    names = a.cases.split(",")
    for name in names:
        if name not in CASES:
            raise SystemExit("autotune: no case %r (cases: %s)" % (name, ", ".join(CASES)))
        check_grid(build, name, CASES[name])
    with tempfile.TemporaryDirectory(prefix="trident-autotune-") as tmp:
        for name in names:
            start = time.time()
            r = run_case(build, name, CASES[name], a.rounds, a.steps, a.bind, a.confirm,
                         a.calibrate_rounds, a.measure, Path(tmp))
            results.append(r)
            report(r, time.time() - start)
            if a.json:  # after every case: a later failure keeps what was measured
                Path(a.json).write_text(json.dumps(results, indent=1, default=str))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))
    publish(a, results)


def publish(a, results):
    """Prints the run with its grids, and writes the table and the results file asked for."""
    text = markdown(results, a.rounds, a.steps, a.bind)
    print(text)
    if a.markdown:
        write_markdown(a.markdown, markdown(results, a.rounds, a.steps, a.bind, grids=False))
    if a.results:
        append_results(a.results, results, text)


if __name__ == "__main__":
    main()
