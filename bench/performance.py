#!/usr/bin/env python3
"""trident's performance figures, each a ratio measured in this run against its target.

    bench/performance.py BUILD_DIR [--steps N] [--doc docs/performance.md]

Runs, one after another on an otherwise idle machine:
  1. the ceiling: the best FLOP/s of a large fp32 matmul, one thread (matmul_ceiling);
  2. the same GPT (hidden 768, 4 layers, 12 heads, sequence 256, GPT-2 vocabulary, fp32,
     micro-batch 4) trained by a plain libtorch loop (gpt_baseline) and by trident at one
     rank: framework overhead and model FLOPs utilisation (MFU);
  3. trident at dp 2 (one thread per rank, weak scaling: micro-batch 4 per rank) with
     ZeRO 0 and 2 against one rank; the exposed communication of each
     (2 and 3 alternate over two rounds, medians over both);
  3b. one rank with two intra-op threads against the plain loop with two (three alternated
     rounds, the median of the per-round ratios);
  4. trident at tp 2: its exposed communication;
  5. the pipeline bubble of GPipe, 1F1B, interleaved 1F1B (v 2) and ZB-H1 at pp 4, m 8
     (and at pp 2, one stage per core here) from the run's trace against each schedule's
     formula, and what ZB-H1's split backward costs against a whole one.
  6. activation memory at tp 2 with and without sequence parallelism, and with no, selective
     and full recomputation: each rank's measured peak against Korthikanti et al.'s formula
     (without its dropout terms: the model has none), and the step time of each.
  7. the nvme offload tier (bench/offload.py): peak RSS with and without it, the disk's
     O_DIRECT bandwidth against the tier's, and training under a memory cap.
  8. the working set of ZeRO 3 with everything in the nvme tier: peak RSS at 6, 12 and 24
     layers of one width, what each layer adds against the layer's training state; and
     a GPT of a billion parameters trained under a 2 GiB cgroup cap; and the step time of
     ZeRO 3 with everything in the tier against memory and the disk (bench/offload.py).
Tokens/s are medians over the steps after the first two (allocation and first touches).
The plain loop runs with the malloc settings trident's main() makes (MALLOC_ENV).
"Exposed communication" is the time a rank spends inside a group's operations, posting,
testing or waiting (metrics.jsonl `wait_s`), over the step time. Prints the table; with --doc, writes it into that Markdown
file between the markers `<!-- bench:begin -->` and `<!-- bench:end -->`.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import offload as offload_figures  # bench/offload.py

ROOT = Path(__file__).resolve().parent.parent
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMP_NUM_THREADS": "1",
}
# The GPT of the MFU target: GPT-2's vocabulary and width, 4 layers, sequence 256.
GPT = {"hidden": 768, "layers": 4, "heads": 12, "seq": 256, "vocab": 50257, "micro": 4}
ROUNDS = 2  # of the compared runs, alternated


# What trident's main() sets with mallopt (src/cli/main.cpp), given to the plain loop too so
# that both run on the same allocator settings.
MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 62)}


def run(cmd, env=None, **kw):
    env = env or dict(os.environ, **MPI_ENV)
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, **kw)
    if out.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, cmd))} failed ({out.returncode}):\n"
                 f"{out.stderr[-3000:]}")
    return out.stdout


def blas_core(build):
    """The kernel set OpenBLAS chose on this processor ("Haswell", "SkylakeX", or the generic
    "Prescott" when it does not know the processor: about a fifth of the FLOP/s), which
    every absolute figure depends on."""
    env = dict(os.environ, OPENBLAS_VERBOSE="2")
    out = subprocess.run([str(Path(build) / "matmul_ceiling"), "--threads", "1", "--seconds",
                          "0.1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    for line in out.stdout.splitlines():
        if line.startswith("Core:"):
            return line.split(":", 1)[1].strip()
    return "unknown (not an OpenBLAS that reports it)"


def later(rows, skip=2):
    return rows[skip:] if len(rows) > skip else rows[-1:]


def median(xs):
    return statistics.median(list(xs))


class Bench:
    def __init__(self, build, steps):
        self.build = Path(build)
        self.steps = steps
        self.tmp = Path(tempfile.mkdtemp(prefix="trident-bench-"))
        self.rows = []  # (figure, measured, target, ok, detail)

    def trident(self, name, ranks, sets, model=GPT, steps=None, trace=False, want_stdout=False,
                env=None):
        """Trains with mpirun -np ranks; returns (metrics rows after warm-up, trace path, or
        with want_stdout the run's standard output)."""
        steps = steps or self.steps
        metrics = self.tmp / f"{name}.jsonl"
        trace_path = self.tmp / f"{name}.trace.json"
        sets = sets + (["logging.trace=%s" % trace_path] if trace else [])
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"] + \
            self.train_command(model, steps, metrics, sets)
        t0 = time.time()
        stdout = run(cmd, env={**os.environ, **MPI_ENV, **(env or {})})
        rows = [json.loads(l) for l in metrics.read_text().splitlines() if l.strip()]
        print(f"   {name}: {ranks} rank(s), {len(rows)} steps in {time.time() - t0:.0f} s, "
              f"{median(r['tokens_per_s'] for r in later(rows)):.0f} tokens/s", flush=True)
        return later(rows), (stdout if want_stdout else trace_path)

    def train_command(self, model, steps, metrics, sets):
        """`trident train` of `model` (fp32, one thread, no checkpoints), logging every step
        to `metrics`, with `sets` (section.key=value) on top."""
        base = [
            "model.layers=%d" % model["layers"], "model.hidden=%d" % model["hidden"],
            "model.heads=%d" % model["heads"], "model.seq_len=%d" % model["seq"],
            "model.vocab=%d" % model["vocab"], "train.micro_batch_size=%d" % model["micro"],
            "train.precision=fp32", "train.threads=1", "train.steps=%d" % steps,
            "train.log_every=1", "train.stop_at=0", "checkpoint.dir=\"\"", "logging.run_dir=none",
            "logging.metrics=%s" % metrics,
        ]
        cmd = [str(self.build / "trident"), "train", str(ROOT / "configs/gpt2-124m.toml")]
        for kv in base + sets:
            cmd += ["--set", kv]
        return cmd

    def add(self, figure, measured, target, ok, detail=""):
        self.rows.append((figure, measured, target, ok, detail))

    def ceiling(self):
        out = json.loads(run([str(self.build / "matmul_ceiling"), "--threads", "1",
                              "--seconds", "4"]).strip().splitlines()[-1])
        self.ceiling_gflops = out["gflops_best"]
        self.add("matmul ceiling, fp32 %d³, 1 thread" % out["size"],
                 "%.1f GFLOP/s" % out["gflops_best"], "(the limit)", None,
                 "median %.1f GFLOP/s" % out["gflops_median"])

    def baseline(self, name, threads=1):
        """The plain libtorch loop; returns its per-step tokens/s after warm-up."""
        m = GPT
        env = dict(os.environ, **MPI_ENV, **MALLOC_ENV)
        env["OMP_NUM_THREADS"] = str(threads)
        out = subprocess.run([
            str(self.build / "gpt_baseline"), "--hidden", str(m["hidden"]), "--layers",
            str(m["layers"]), "--heads", str(m["heads"]), "--seq", str(m["seq"]), "--vocab",
            str(m["vocab"]), "--micro-batch", str(m["micro"]), "--micro-batches", "1",
            "--steps", str(self.steps), "--threads", str(threads)], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        if out.returncode != 0:
            sys.exit(f"bench: gpt_baseline failed:\n{out.stderr[-3000:]}")
        rates = [float(line.rsplit("tokens/s", 1)[1]) for line in out.stderr.splitlines()
                 if line.startswith("step ") and "tokens/s" in line]
        print(f"   {name}: plain libtorch loop, {median(later(rates)):.0f} tokens/s", flush=True)
        return later(rates)

    def one_rank_and_data_parallel(self):
        """Alternates the runs that are compared, so that a slow phase of the machine
        falls on both sides of each ratio: ROUNDS × (plain loop, 1 rank, dp 2 ZeRO-0 and 2)."""
        m = GPT
        base, dp1, dp2 = [], [], {0: [], 2: []}
        for k in range(ROUNDS):
            base += self.baseline(f"baseline.{k}")
            rows, _ = self.trident(f"dp1.{k}", 1, ["parallel.dp=1", "parallel.zero_stage=0",
                                                   "train.global_batch_size=%d" % m["micro"]])
            dp1 += rows
            for stage in (0, 2):
                rows, _ = self.trident(f"dp2_zero{stage}.{k}", 2, [
                    "parallel.dp=2", "parallel.zero_stage=%d" % stage,
                    "train.global_batch_size=%d" % (2 * m["micro"])])
                dp2[stage] += rows
        baseline = median(base)
        self.dp1 = median(r["tokens_per_s"] for r in dp1)
        ratio = self.dp1 / baseline
        self.add("trident 1 rank / plain libtorch loop (tokens/s)", "%.3f" % ratio, ">= 0.97",
                 ratio >= 0.97, "%.0f vs %.0f tokens/s" % (self.dp1, baseline))
        achieved = median(r["tflops"] for r in dp1) * 1e3  # GFLOP/s
        mfu = achieved / self.ceiling_gflops
        self.add("MFU, GPT h768 L4 T256, 1 rank", "%.3f" % mfu, ">= 0.50", mfu >= 0.5,
                 "%.1f of %.1f GFLOP/s" % (achieved, self.ceiling_gflops))
        rate = {st: median(r["tokens_per_s"] for r in rows) for st, rows in dp2.items()}
        speedup = rate[0] / self.dp1
        self.add("dp 2 / 1 rank, one thread each (tokens/s)", "%.3f" % speedup, ">= 1.85",
                 speedup >= 1.85, "%.0f vs %.0f tokens/s" % (rate[0], self.dp1))
        z = rate[2] / rate[0]
        self.add("ZeRO-2 / ZeRO-0 at dp 2 (tokens/s)", "%.3f" % z, ">= 0.95", z >= 0.95,
                 "%.0f vs %.0f tokens/s" % (rate[2], rate[0]))
        # The machine's own limit for two ranks: two independent 1-rank runs at once, with
        # no communication between them, against one alone.
        pair = self.independent_pair(m)
        self.add("two independent 1-rank runs at once / 1 rank (tokens/s)", "%.3f" % (pair / self.dp1),
                 "(the machine's limit)", None,
                 "dp 2 reaches %.3f of it" % (rate[0] / pair))
        for stage in (0, 2):
            exposed = median(r["wait_s"]["dp"] / r["step_time_s"] for r in dp2[stage])
            self.add("exposed dp communication, dp 2 ZeRO-%d" % stage, "%.3f" % exposed,
                     "<= 0.10", exposed <= 0.10, "of the step time, inside dp communication")

    def two_thread_rounds(self, rounds):
        """`rounds` alternated pairs of the plain loop and one trident rank, two intra-op
        threads each, run back to back; returns (ratios, trident's and the loop's tokens/s),
        one of each per round."""
        m = GPT
        ratios, ours, theirs = [], [], []
        for k in range(rounds):
            base = median(self.baseline(f"baseline_2threads.{k}", threads=2))
            rows, _ = self.trident(f"dp1_2threads.{k}", 1, [
                "parallel.dp=1", "parallel.zero_stage=0", "train.threads=2",
                "train.global_batch_size=%d" % m["micro"]], env={"OMP_NUM_THREADS": "2"})
            rate = median(r["tokens_per_s"] for r in rows)
            ours.append(rate)
            theirs.append(base)
            ratios.append(rate / base)
        return ratios, ours, theirs

    def two_threads(self):
        """One rank with two intra-op threads against the plain loop with two, alternated
        over ROUNDS (each ratio of a round is a pair run back to back), median of the rounds."""
        ratios, ours, theirs = self.two_thread_rounds(max(ROUNDS, 3))
        ratio = median(ratios)
        self.add("trident 1 rank / plain libtorch loop, two threads each (tokens/s)",
                 "%.3f" % ratio, ">= 1.10", ratio >= 1.10,
                 "%.0f vs %.0f tokens/s; rounds %s" % (median(ours), median(theirs),
                                                       ", ".join("%.3f" % r for r in ratios)))

    def zero3(self):
        """ZeRO-3 against ZeRO-2 at dp 2, with the next layer's gather prefetched and not
        (alternated over ROUNDS), and the dp communication each leaves exposed."""
        m = GPT
        runs = {
            "zero2": ["parallel.zero_stage=2"],
            "zero3": ["parallel.zero_stage=3"],
            "zero3_no_prefetch": ["parallel.zero_stage=3", "parallel.zero3_prefetch=off"],
            "zero3_keep_gathered": ["parallel.zero_stage=3",
                                    "parallel.zero3_reshard_after_forward=off"],
        }
        rows = {name: [] for name in runs}
        for k in range(ROUNDS):
            for name, sets in runs.items():
                got, _ = self.trident(f"dp2_{name}.{k}", 2, sets + [
                    "parallel.dp=2", "train.global_batch_size=%d" % (2 * m["micro"])])
                rows[name] += got
        rate = {n: median(r["tokens_per_s"] for r in rs) for n, rs in rows.items()}
        exposed = {n: median(r["wait_s"]["dp"] / r["step_time_s"] for r in rs)
                   for n, rs in rows.items()}
        z = rate["zero3"] / rate["zero2"]
        self.add("ZeRO-3 / ZeRO-2 at dp 2, prefetch on (tokens/s)", "%.3f" % z, ">= 0.90",
                 z >= 0.90, "%.0f vs %.0f tokens/s" % (rate["zero3"], rate["zero2"]))
        off = rate["zero3_no_prefetch"] / rate["zero2"]
        self.add("ZeRO-3 / ZeRO-2 at dp 2, prefetch off (tokens/s)", "%.3f" % off,
                 "(what prefetch buys)", None,
                 "prefetch on / off = %.3f" % (rate["zero3"] / rate["zero3_no_prefetch"]))
        keep = rate["zero3_keep_gathered"] / rate["zero2"]
        self.add("ZeRO-3 / ZeRO-2 at dp 2, kept gathered through the step (tokens/s)",
                 "%.3f" % keep, "(the reshard choice)", None,
                 "reshard after forward / kept = %.3f" % (rate["zero3"] / rate["zero3_keep_gathered"]))
        for name in runs:
            self.add("exposed dp communication, dp 2 %s" % name.replace("_", " "),
                     "%.3f" % exposed[name], "(measured)", None,
                     "of the step time, inside dp communication")

    def independent_pair(self, m):
        """Summed tokens/s of two 1-rank trainings running at the same time."""
        env = dict(os.environ, **MPI_ENV)
        procs, paths = [], []
        for k in range(2):
            path = self.tmp / f"pair{k}.jsonl"
            paths.append(path)
            cmd = self.train_command(m, self.steps, path, ["parallel.zero_stage=0",
                                                           "train.global_batch_size=%d" % m["micro"]])
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True))
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                sys.exit(f"bench: an independent 1-rank run failed:\n{err[-3000:]}")
        total = 0.0
        for path in paths:
            rows = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
            total += median(r["tokens_per_s"] for r in later(rows))
        print(f"   two independent 1-rank runs at once: {total:.0f} tokens/s together", flush=True)
        return total

    def tensor_parallel(self):
        m = GPT
        rows, _ = self.trident("tp2", 2, ["parallel.tp=2", "parallel.zero_stage=0",
                                          "train.global_batch_size=%d" % m["micro"]])
        exposed = median(r["wait_s"]["tp"] / r["step_time_s"] for r in rows)
        tps = median(r["tokens_per_s"] for r in rows)
        self.add("exposed tp communication, tp 2", "%.3f" % exposed, "(report)", None,
                 "tp 2 / 1 rank: %.3f (%.0f tokens/s)" % (tps / self.dp1, tps))

    def pipeline(self):
        """The bubble of each schedule at pp 4 (1F1B's is the target) and at pp 2, where
        every stage has a core of its own on a two-core machine, against its formula: GPipe
        and 1F1B (p-1)/(m+p-1), interleaved 1F1B with v = 2 (p-1)/(v*m+p-1), ZB-H1
        (p-1)/(3m+p-1) (equal F, B, W; the detail adds (p-1)(F+B-W)/(m(F+B+W)+(p-1)(F+B-W))
        with the measured medians). Also what a split backward costs: B + W and W alone
        over 1F1B's whole backward."""
        m = 8
        for p in (4, 2):
            whole_backward = None
            for schedule, v in (("gpipe", 1), ("1f1b", 1), ("interleaved-1f1b", 2), ("zb-h1", 1)):
                r = self.bubble(p, m, schedule, v)
                if schedule == "1f1b":
                    whole_backward = r["backward"]
                if schedule == "interleaved-1f1b":
                    formula, name = (p - 1) / (v * m + p - 1), "(p-1)/(v*m+p-1), v 2"
                elif schedule == "zb-h1":
                    # Against the paper's F = B = W figure; the formula with the measured
                    # costs goes in the detail (0 once W >= F + B: the cool-down is full).
                    f, b, w = r["forward"], r["backward-input"], r["backward-weight"]
                    idle = (p - 1) * max(f + b - w, 0.0)
                    measured_costs = idle / (m * (f + b + w) + idle)
                    formula, name = (p - 1) / (3 * m + p - 1), "(p-1)/(3m+p-1)"
                else:
                    formula, name = (p - 1) / (m + p - 1), "(p-1)/(m+p-1)"
                ratio = r["bubble"] / formula
                detail = "%.3f vs %.3f; %d ranks on %d cores; one stage's compute %s ms" % (
                    r["bubble"], formula, p, os.cpu_count(), r["spread"])
                if schedule == "zb-h1" and whole_backward:
                    detail += ("; F %.1f, B %.1f, W %.1f ms, formula with these costs %.3f; "
                               "B+W / 1F1B's backward %.2f, W / 1F1B's backward %.2f" % (
                                   f, b, w, measured_costs, (b + w) / whole_backward,
                                   w / whole_backward))
                target, ok = "(report)", None
                if p == 4 and schedule == "1f1b":
                    target, ok = "<= 1.10", ratio <= 1.10
                self.add("pipeline bubble %s pp %d, m %d: measured / %s" % (schedule, p, m, name),
                         "%.3f" % ratio, target, ok, detail)

    def bubble(self, p, m, schedule="1f1b", v=1):
        """The measured idle fraction of `schedule` at pp p, m micro-batches, from a run's
        trace, with the median duration of each compute kind on the last stage and their
        range. Eight layers and a small vocabulary, so that the stages are equal as the
        formulas assume."""
        model = {"hidden": 256, "layers": 8, "heads": 4, "seq": 128, "vocab": 256, "micro": 2}
        steps = max(self.steps, 10)
        kinds = ("forward", "backward", "backward-input", "backward-weight")
        _, trace = self.trident(f"pp{p}_{schedule}", p,
                                ["parallel.pp=%d" % p, "parallel.schedule=%s" % schedule,
                                 "parallel.virtual_stages=%d" % v, "parallel.zero_stage=0",
                                 "train.global_batch_size=%d" % (m * model["micro"])],
                                model=model, steps=steps, trace=True)
        events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
        fractions, durations = [], {k: [] for k in kinds}
        for step in range(3, steps + 1):
            compute = [e for e in events if e["args"]["step"] == step and e["cat"] in kinds]
            if not compute:
                continue
            start = min(e["ts"] for e in compute)
            end = max(e["ts"] + e["dur"] for e in compute)
            busy = sum(e["dur"] for e in compute)
            fractions.append(1 - busy / (p * (end - start)))
            last = max(e["pid"] for e in compute)
            for e in compute:
                if e["pid"] == last:
                    durations[e["cat"]].append(e["dur"] / 1e3)
        every = [d for k in kinds for d in durations[k]]
        out = {k: (median(durations[k]) if durations[k] else 0.0) for k in kinds}
        out["bubble"] = median(fractions)
        out["spread"] = "%.0f-%.0f" % (min(every), max(every))
        return out

    def activation_memory(self):
        """tp 2, one stage: the peak activation bytes `trident train` reports for rank 0
        against the formula's L layers (plan/memory_model.h, fp32, no dropout); the rest of
        the measured bytes is the embedding, the head and the micro-batch's data, which the
        formula leaves out. Then selective and full recomputation's step time against none."""
        model = {"hidden": 256, "layers": 4, "heads": 4, "seq": 256, "vocab": 256, "micro": 2}
        s, b, h, a, t, L = model["seq"], model["micro"], model["hidden"], model["heads"], 2, model["layers"]

        def formula(sp, recompute):
            split = t if sp else 1
            if recompute == "full":
                return L * 2 * s * b * h / split * 2  # each layer's input, 4-byte elements
            core = 0 if recompute == "selective" else 2 * a * s / (h * t)
            return L * s * b * h * (8 / split + 24 / t + core) * 2

        rates, peaks = {}, {}
        for k in range(ROUNDS):
            for recompute in ("none", "selective", "full"):
                for sp in (False, True):
                    name = f"tp2_{recompute}{'_sp' if sp else ''}"
                    rows, out = self.trident(f"{name}.{k}", 2, [
                        "parallel.tp=2", "parallel.zero_stage=0",
                        "parallel.activation_checkpointing=%s" % recompute,
                        "parallel.sequence_parallel=%s" % ("true" if sp else "false"),
                        "train.global_batch_size=%d" % model["micro"]], model=model,
                        want_stdout=True)
                    rates.setdefault(name, []).extend(r["step_time_s"] for r in rows)
                    peaks[name] = peak_activation_bytes(out)
        for recompute in ("none", "selective"):
            for sp in (False, True):
                name = f"tp2_{recompute}{'_sp' if sp else ''}"
                want = formula(sp, recompute)
                self.add("activation bytes tp 2 %s%s / formula" % (recompute, ", sp" if sp else ""),
                         "%.3f" % (peaks[name] / want), "(report)", None,
                         "%d vs %d bytes (4 layers; the rest is embedding, head, data)"
                         % (peaks[name], want))
        for recompute in ("none", "selective", "full"):
            ratio = peaks[f"tp2_{recompute}_sp"] / peaks[f"tp2_{recompute}"]
            # Full recomputation keeps each layer's input and, at pp 1, where the head reads
            # the embedding, the head's activations.
            what = " (each layer's input; the head's activations at pp 1)" \
                if recompute == "full" else ""
            self.add("activation bytes tp 2 %s: sp / no sp" % recompute, "%.3f" % ratio,
                     "(report)", None, "%d vs %d bytes%s" % (peaks[f"tp2_{recompute}_sp"],
                                                             peaks[f"tp2_{recompute}"], what))
        for recompute in ("selective", "full"):
            ratio = median(rates[f"tp2_{recompute}"]) / median(rates["tp2_none"])
            self.add("step time tp 2 %s / none" % recompute, "%.3f" % ratio, "(report)", None,
                     "median %.3f vs %.3f s" % (median(rates[f"tp2_{recompute}"]),
                                                median(rates["tp2_none"])))
        ratio = median(rates["tp2_none_sp"]) / median(rates["tp2_none"])
        self.add("step time tp 2 sp / no sp", "%.3f" % ratio, "(report)", None,
                 "median %.3f vs %.3f s" % (median(rates["tp2_none_sp"]), median(rates["tp2_none"])))

    def offload(self):
        """The nvme tier: peak RSS, disk and tier bandwidth, and capacity under a cap."""
        offload_figures.offload(self)

    def working_set(self):
        """ZeRO 3 with everything in the nvme tier: peak RSS against depth."""
        offload_figures.working_set(self)

    def capacity(self):
        """A billion parameters under a 2 GiB cap, everything in the nvme tier."""
        offload_figures.capacity(self)

    def tier_speed(self):
        """ZeRO 3 with everything in the nvme tier against memory and the disk: step time."""
        offload_figures.tier_speed(self)

    def table(self):
        lines = ["| figure | measured | target | met | detail |", "|---|---|---|---|---|"]
        for figure, measured, target, ok, detail in self.rows:
            met = "" if ok is None else ("yes" if ok else "**no**")
            lines.append(f"| {figure} | {measured} | {target} | {met} | {detail} |")
        return "\n".join(lines)


def peak_activation_bytes(stdout):
    """Rank 0's peak activation bytes from `trident train`'s memory report
    ("rank 0 (dp 0 pp 0 tp 0): params / grads / optimizer / activations")."""
    for line in reversed(stdout.splitlines()):
        if line.strip().startswith("rank 0 ("):
            return int(line.rsplit("/", 1)[1])
    sys.exit("bench: no memory report in trident train's output")


def write_doc(path, table, header):
    text = Path(path).read_text()
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    if begin not in text or end not in text:
        sys.exit(f"bench: {path} lacks the markers {begin} and {end}")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    Path(path).write_text(f"{head}{begin}\n{header}\n\n{table}\n{end}{tail}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--doc", default="")
    ap.add_argument("--parts", default="",
                    help="comma-separated subset of: ceiling, one_rank_and_data_parallel, "
                         "two_threads, tensor_parallel, pipeline, zero3, activation_memory, offload, "
                         "working_set, capacity, tier_speed "
                         "(default: all)")
    a = ap.parse_args()
    b = Bench(a.build, a.steps)
    t0 = time.time()
    parts = (b.ceiling, b.one_rank_and_data_parallel, b.two_threads, b.tensor_parallel,
             b.pipeline, b.zero3, b.activation_memory, b.offload, b.working_set,
             b.capacity, b.tier_speed)
    if a.parts:
        wanted = a.parts.split(",")
        parts = tuple(p for p in parts if p.__name__ in wanted)
    for part in parts:
        print(f"== {part.__name__.replace('_', ' ')}", flush=True)
        part()
    table = b.table()
    header = (f"Measured by `scripts/bench.sh` on {time.strftime('%Y-%m-%d')}: "
              f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
              f"OpenBLAS kernels {blas_core(a.build)}, "
              f"load average {os.getloadavg()[0]:.2f} at the end, {time.time() - t0:.0f} s.")
    print()
    print(header)
    print(table)
    if a.doc:
        write_doc(a.doc, table, header)
        print(f"\nwrote the table into {a.doc}")


if __name__ == "__main__":
    main()
