"""The nvme offload tier's figures for bench/performance.py (its `offload` part).

  * peak RSS (the kernel's ru_maxrss of the one rank) of a 124M-parameter GPT trained with
    and without parallel.offload_optimizer = "nvme": the drop against the bytes offloaded;
  * the disk's own O_DIRECT sequential write and read bandwidth (dd, 1 GiB, 4 MiB blocks)
    against the bandwidth the tier achieves while streaming the AdamW step, and the
    fraction of the step spent blocked on the tier;
  * capacity: a cgroup v1 memory cap that the run in memory exceeds (killed) and the
    offloaded run survives for several steps with falling loss. The cgroup is made under
    /sys/fs/cgroup/memory and removed afterwards, also on failure.

And its `working_set` part: the peak RSS of one ZeRO-3 rank with parameters, gradients and
optimizer states in the tier, at 6, 12 and 24 layers of one width; what each added layer
adds, against the layer's training state (16 bytes per parameter in fp32). Its `capacity`
part: a GPT of a billion parameters, 16 GB of training state, under a 2 GiB cgroup cap:
three steps with everything in the tier, and the same model in memory, which is killed.
Its `tier_speed` part: the step of a 160M-parameter GPT with everything in the tier against
the same model in memory and against the tier's bytes at the disk bandwidth `trident
calibrate --disk-dir` measures, with the fraction of the step blocked on the tier.
"""
import math
import os
import re
import shutil
import subprocess
import time

from memory_cap import run_capped

# A GPT of 101M parameters (8 layers of width 1024) whose optimizer states (8 bytes each in
# fp32: both moments; the parameters are their own master) are what the tier takes. Short
# sequences keep activations small, so that model state dominates memory; 256 tokens per
# step make forward and backward longer than the AdamW step; a vocabulary of 256 lets the
# synthetic Markov source's loss fall within the few steps measured.
OFFLOAD_GPT = {"hidden": 1024, "layers": 8, "heads": 16, "seq": 64, "vocab": 256, "micro": 4}


def gpt_parameters(m):
    """GPT-2's count: per layer 12 h^2 + 13 h, token and position embeddings, final norm."""
    h = m["hidden"]
    return m["layers"] * (12 * h * h + 13 * h) + (m["vocab"] + m["seq"]) * h + 2 * h


PARAMS = gpt_parameters(OFFLOAD_GPT)


def dd_bandwidth(path, write):
    """Bytes/s of dd with O_DIRECT, 1 GiB in 4 MiB blocks."""
    if write:
        cmd = ["dd", "if=/dev/zero", f"of={path}", "bs=4M", "count=256", "oflag=direct"]
    else:
        cmd = ["dd", f"if={path}", "of=/dev/null", "bs=4M", "iflag=direct"]
    out = subprocess.run(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         check=True).stderr
    m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", out)
    return int(m.group(1)) / float(m.group(2))


def offload_sets(tier_dir):
    return ["parallel.offload_optimizer=nvme", f"parallel.nvme_path={tier_dir}"]


def one_rank_sets(m):
    # No warm-up, so that the loss falls within the few steps measured.
    return ["parallel.dp=1", "parallel.zero_stage=1", "train.global_batch_size=%d" % m["micro"],
            "optimizer.lr=6e-4", "optimizer.min_lr=6e-5", "optimizer.warmup_steps=0"]


def capped_run(bench, name, limit_bytes, sets, steps, model=OFFLOAD_GPT):
    """Runs `trident train` of `model` on one rank inside a fresh memory cgroup of
    `limit_bytes`; returns (exit code, metrics rows, seconds)."""
    metrics = bench.tmp / f"{name}.jsonl"
    cmd = bench.train_command(model, steps, metrics, sets)
    t0 = time.time()
    # One rank: no mpirun needed.
    code = run_capped(cmd, limit_bytes, name, env=dict(os.environ, OMP_NUM_THREADS="1"))
    seconds = time.time() - t0
    rows = [__import__("json").loads(l) for l in metrics.read_text().splitlines()
            if l.strip()] if metrics.exists() else []
    return code, rows, seconds


def offload(bench):
    m = OFFLOAD_GPT
    tier = bench.tmp / "tier"
    steps = 4
    mib = 1 << 20
    # Peak RSS, alternated over two rounds.
    rss = {"none": [], "nvme": []}
    tier_rows = []
    for k in range(2):
        for kind in ("none", "nvme"):
            sets = one_rank_sets(m) + (offload_sets(tier) if kind == "nvme" else [])
            rows, _ = bench.trident(f"offload_{kind}.{k}", 1, sets, model=m, steps=steps)
            rss[kind].append(rows[-1]["peak_rss_bytes"])
            if kind == "nvme":
                tier_rows += rows
    offloaded = 8 * PARAMS  # exp_avg and exp_avg_sq in fp32
    drop = min(rss["none"]) - max(rss["nvme"])
    frac = drop / offloaded
    bench.add("peak RSS drop with the nvme tier / bytes offloaded (%.0fM params, 1 rank)"
              % (PARAMS / 1e6),
              "%.3f" % frac, ">= 0.80", frac >= 0.80,
              "peak RSS %.0f -> %.0f MiB (ranges %s, %s); 8 bytes x %d params = %.0f MiB offloaded"
              % (min(rss["none"]) / mib, max(rss["nvme"]) / mib,
                 [round(x / mib) for x in rss["none"]], [round(x / mib) for x in rss["nvme"]],
                 PARAMS, offloaded / mib))

    # The disk against the tier.
    probe = bench.tmp / "dd.bin"
    write_bw = dd_bandwidth(probe, True)
    read_bw = dd_bandwidth(probe, False)
    probe.unlink()
    disk = (write_bw + read_bw) / 2
    tier_bw = median_of([r["tier"]["bytes"] / r["tier"]["stream_s"] for r in tier_rows])
    ratio = tier_bw / disk
    bench.add("nvme tier bandwidth / disk O_DIRECT bandwidth", "%.3f" % ratio, ">= 0.80",
              ratio >= 0.80,
              "tier %.0f MB/s (read+write while AdamW streams) vs dd write %.0f, read %.0f MB/s"
              % (tier_bw / 1e6, write_bw / 1e6, read_bw / 1e6))
    wait = median_of([r["tier"]["wait_s"] / r["step_time_s"] for r in tier_rows])
    stream = median_of([r["tier"]["stream_s"] / r["step_time_s"] for r in tier_rows])
    bench.add("step fraction blocked on the nvme tier (%.0fM params, 1 rank), %d tokens per step"
              % (PARAMS / 1e6, m["micro"] * m["seq"]),
              "%.3f" % wait,
              "<= 0.10", wait <= 0.10,
              "the streamed AdamW step is %.2f of the step; step %.2f s" % (
                  stream, median_of([r["step_time_s"] for r in tier_rows])))

    # The same tier under four times the tokens per step: the tier's traffic per step
    # (16 bytes x params, read and written) stays, forward and backward grow.
    big = dict(m, micro=4 * m["micro"])
    big_rows = []
    for k in range(2):
        rows, _ = bench.trident(f"offload_nvme_big.{k}", 1, one_rank_sets(big) + offload_sets(tier),
                                model=big, steps=steps)
        big_rows += rows
    wait_big = median_of([r["tier"]["wait_s"] / r["step_time_s"] for r in big_rows])
    stream_big = median_of([r["tier"]["stream_s"] / r["step_time_s"] for r in big_rows])
    bench.add("step fraction blocked on the nvme tier, %d tokens per step" % (big["micro"] * big["seq"]),
              "%.3f" % wait_big, "<= 0.10", wait_big <= 0.10,
              "the streamed AdamW step is %.2f of the step; step %.2f s" % (
                  stream_big, median_of([r["step_time_s"] for r in big_rows])))

    # Capacity under a memory cap between the two peaks.
    cap = (min(rss["none"]) + max(rss["nvme"])) // 2
    steps = 6  # the loss of a few steps is noisy: compare the last with the first
    code_none, rows_none, _ = capped_run(bench, "cap_none", cap, one_rank_sets(m), steps)
    code_nvme, rows_nvme, _ = capped_run(bench, "cap_nvme", cap,
                                         one_rank_sets(m) + offload_sets(tier), steps)
    losses = [r["loss"] for r in rows_nvme]
    survived = code_none != 0 and code_nvme == 0 and len(losses) == steps and \
        all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    bench.add("capacity: %d MiB cgroup cap, %.0fM params, 1 rank" % (cap // mib, PARAMS / 1e6),
              "in memory: exit %d after %d steps; nvme: %d steps" % (code_none, len(rows_none),
                                                                    len(rows_nvme)),
              "nvme trains, loss finite and falling", survived,
              "nvme losses %s, step %.2f s" % ([round(x, 3) for x in losses],
                                                 median_of([r["step_time_s"] for r in rows_nvme])
                                                 if rows_nvme else 0.0))


# One width at three depths: each layer is 12.6M parameters, 201 MB of training state.
WORKING_SET_GPT = {"hidden": 1024, "heads": 16, "seq": 64, "vocab": 256, "micro": 4}
WORKING_SET_LAYERS = (6, 12, 24)


def working_set_sets(tier, recompute):
    return one_rank_sets(WORKING_SET_GPT) + offload_sets(tier) + [
        "parallel.zero_stage=3", "parallel.offload_params=nvme",
        "parallel.activation_checkpointing=%s" % ("full" if recompute else "none")]


def peak_activation_bytes(stdout):
    """Rank 0's peak activation bytes from `trident train`'s memory report (its last field)."""
    for line in reversed(stdout.splitlines()):
        if line.strip().startswith("rank 0 ("):
            return int(line.rsplit("/", 1)[1])
    raise SystemExit("bench: no memory report in trident train's output")


def working_set(bench):
    h = WORKING_SET_GPT["hidden"]
    layer_state = 16 * (12 * h * h + 13 * h)  # parameter, gradient, both moments: fp32
    mib = 1 << 20
    tier = bench.tmp / "tier_ws"
    tier.mkdir(exist_ok=True)
    cluster, _ = calibrate(bench, tier, "calibrate_ws")
    peaks, activations, steps = {}, {}, {}
    predicted, measured = [], []
    for recompute in (True, False):
        for layers in WORKING_SET_LAYERS:
            m = dict(WORKING_SET_GPT, layers=layers)
            rows, out = bench.trident(
                "working_set_%d_%s" % (layers, "full" if recompute else "none"), 1,
                working_set_sets(tier, recompute), model=m, steps=3, want_stdout=True)
            peaks[(recompute, layers)] = rows[-1]["peak_rss_bytes"]
            activations[(recompute, layers)] = peak_activation_bytes(out)
            steps[(recompute, layers)] = rows[-1]["step_time_s"]
            predicted.append(planned(bench, m, working_set_sets(tier, recompute), cluster))
            measured.append((steps[(recompute, layers)], peaks[(recompute, layers)]))
    prediction_row(bench, "ZeRO 3, everything in the tier, %s layers of width %d, with and "
                   "without recomputation" % (",".join(map(str, WORKING_SET_LAYERS)),
                                              WORKING_SET_GPT["hidden"]), predicted, measured)
    lo, hi = WORKING_SET_LAYERS[0], WORKING_SET_LAYERS[-1]

    def per_layer(table, recompute):
        return (table[(recompute, hi)] - table[(recompute, lo)]) / (hi - lo)

    def listed(table, recompute, unit=mib, fmt="%.0f"):
        return "/".join(fmt % (table[(recompute, n)] / unit) for n in WORKING_SET_LAYERS)

    frac = per_layer(peaks, True) / layer_state
    bench.add("peak RSS added per layer / a layer's training state (ZeRO 3, everything in the "
              "nvme tier, full recomputation, 1 rank)", "%.3f" % frac, "<= 0.05", frac <= 0.05,
              "peak RSS at %s layers of width %d: %s MiB; a layer's state %.0f MiB; training "
              "state / peak RSS at %d layers: %.1f; step %s s"
              % (",".join(map(str, WORKING_SET_LAYERS)), h, listed(peaks, True),
                 layer_state / mib, hi, (hi * layer_state) / peaks[(True, hi)],
                 listed(steps, True, 1, "%.1f")))
    # Without recomputation each layer's saved activations stay until its backward: those
    # grow with depth by design. Everything else must not: the gathered weights autograd
    # saved views of are freed after forward and gathered again for backward.
    tokens = WORKING_SET_GPT["micro"] * WORKING_SET_GPT["seq"]
    beyond = (per_layer(peaks, False) - per_layer(activations, False)) / layer_state
    bench.add("the same without recomputation, less the activations each layer keeps (%d "
              "tokens per step) / a layer's training state" % tokens,
              "%.3f" % beyond, "<= 0.05", beyond <= 0.05,
              "peak RSS %s MiB, %.1f MiB per layer, of which activations %.1f MiB; a layer's "
              "fp32 weights are %.0f MiB"
              % (listed(peaks, False), per_layer(peaks, False) / mib,
                 per_layer(activations, False) / mib, 4 * 12 * h * h / mib))


# At least a billion parameters: 20 layers of width 2048 (50.3M each), 16 bytes of training
# state each in fp32 (16.1 GB), under a cgroup cap of 2 GiB.
CAPACITY_GPT = {"hidden": 2048, "layers": 20, "heads": 16, "seq": 64, "vocab": 256, "micro": 4}
CAPACITY_CAP = 2 << 30


def capacity(bench):
    m = CAPACITY_GPT
    params = gpt_parameters(m)
    tier = bench.tmp / "tier_capacity"
    steps = 3
    gib = 1 << 30
    # A step of Adam moves every weight by about the learning rate: at this width a larger
    # one overshoots in the first steps (5.93 to 8.05 at 3e-4, to 7.43 at 5e-5).
    lr = ["optimizer.lr=1e-5", "optimizer.min_lr=1e-5"]
    sets = working_set_sets(tier, True) + lr
    tier.mkdir(exist_ok=True)
    cluster, _ = calibrate(bench, tier, "calibrate_capacity")
    # The last step is saved (streamed from the tier, window by window) and a second capped
    # run resumes from it for one more step.
    ckpt = bench.tmp / "capacity_checkpoints"
    saving = ["checkpoint.dir=%s" % ckpt]
    code_nvme, rows_nvme, seconds = capped_run(bench, "capacity_nvme", CAPACITY_CAP,
                                               sets + saving, steps, model=m)
    saved = sum(f.stat().st_size for f in ckpt.rglob("*") if f.is_file()) if ckpt.exists() else 0
    code_resume, rows_resume, seconds_resume = capped_run(
        bench, "capacity_resume", CAPACITY_CAP, sets + saving + ["checkpoint.load=auto"],
        steps + 1, model=m)
    shutil.rmtree(ckpt, ignore_errors=True)
    code_none, rows_none, _ = capped_run(
        bench, "capacity_none", CAPACITY_CAP,
        one_rank_sets(m) + ["parallel.zero_stage=0", "parallel.activation_checkpointing=full"] + lr,
        steps, model=m)
    losses = [r["loss"] for r in rows_nvme]
    trained = code_nvme == 0 and len(losses) == steps and \
        all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    killed = code_none != 0 and not rows_none
    disk = 16 * params  # the tier file: parameter, gradient and both moments, 4 bytes each
    bench.add("capacity: %.2fB parameters (%.1f GB of training state) under a %d GiB cgroup cap, "
              "1 rank" % (params / 1e9, 16 * params / 1e9, CAPACITY_CAP // gib),
              "nvme: %d steps, exit %d; in memory: exit %d after %d steps"
              % (len(rows_nvme), code_nvme, code_none, len(rows_none)),
              "nvme trains, loss finite and falling; in memory killed before step 1",
              trained and killed,
              "losses %s; step %s s; %.0f s in all; peak RSS %s MiB; tier file about %.1f GB"
              % ([round(x, 3) for x in losses], [round(r["step_time_s"], 1) for r in rows_nvme],
                 seconds, [round(r["peak_rss_bytes"] / (1 << 20)) for r in rows_nvme][-1:],
                 disk / 1e9))
    resumed = code_resume == 0 and [r["step"] for r in rows_resume] == [steps + 1] and \
        math.isfinite(rows_resume[0]["loss"])
    bench.add("capacity: the same run saves step %d under the cap and a capped run resumes "
              "from it" % steps,
              "save: exit %d, %.1f GB; resume: exit %d, steps %s"
              % (code_nvme, saved / 1e9, code_resume, [r["step"] for r in rows_resume]),
              "both exit 0; step %d trains with a finite loss" % (steps + 1), resumed,
              "resumed run %.0f s in all (the load, then one step); loss %s; peak RSS %s MiB"
              % (seconds_resume, [round(r["loss"], 3) for r in rows_resume],
                 [round(r["peak_rss_bytes"] / (1 << 20)) for r in rows_resume]))
    if rows_nvme:
        # A shape the planner was not calibrated on: width 2048, twice the others'.
        prediction_row(bench, "%.2fB parameters, everything in the tier (width 2048, held out)"
                       % (params / 1e9), [planned(bench, m, sets, cluster)],
                       [(median_of([r["step_time_s"] for r in rows_nvme]),
                         max(r["peak_rss_bytes"] for r in rows_nvme))])


# The 160M-parameter model: 12 layers of width 1024, a vocabulary of 8192.
SPEED_GPT = {"hidden": 1024, "layers": 12, "heads": 16, "seq": 64, "vocab": 8192, "micro": 4}


def calibrate(bench, tier_dir, name="calibrate"):
    """One round of `trident calibrate --disk-dir`: the cluster file the planner is given,
    and its disk bandwidth (GB/s, the mean of its O_DIRECT write and read)."""
    out = bench.tmp / f"{name}.toml"
    subprocess.run([str(bench.build / "trident"), "calibrate", "--rounds", "1", "--threads", "1",
                    "--disk-dir", str(tier_dir), "--out", str(out)],
                   env=dict(os.environ, OMP_NUM_THREADS="1"), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    m = re.search(r"^disk_gbps\s*=\s*([\d.eE+-]+)", out.read_text(), re.M)
    if not m:
        raise SystemExit("bench: no disk_gbps in trident calibrate's output")
    return out, float(m.group(1))


def planned(bench, model, sets, cluster):
    """`trident plan --layout` of the one-rank run `sets` describes, on `cluster`: the
    predicted step time (s) and peak RSS (bytes: the device's total and the process base)."""
    cmd = bench.train_command(model, 1, bench.tmp / "plan.jsonl", sets)
    cmd[1] = "plan"
    kv = dict(x.split("=", 1) for x in sets)
    layout = "1,1,1,%s,%d,%s" % (kv.get("parallel.zero_stage", "0"), model["micro"],
                                 kv.get("parallel.activation_checkpointing", "none"))
    out = subprocess.run(cmd + ["--layout", layout, "--cluster", str(cluster), "--json"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    import json
    plan = json.loads(out)
    e = plan["layouts"][0]
    return e["time_s"]["total"], e["memory_bytes"]["total"] + plan["cluster"]["process_base_bytes"]


def prediction_row(bench, what, predicted, measured):
    """Adds the planner's figure against the run's: step time within 25%, peak RSS 10%."""
    for i, (name, target) in enumerate((("step time", 0.25), ("peak RSS", 0.10))):
        errors = [p[i] / m[i] - 1 for p, m in zip(predicted, measured)]
        worst = max(errors, key=abs)
        unit = (lambda x: "%.2f s" % x) if i == 0 else (lambda x: "%.0f MiB" % (x / (1 << 20)))
        bench.add("planner's %s / measured - 1, %s" % (name, what), "%+.3f (worst)" % worst,
                  "within %.0f%%" % (100 * target), abs(worst) <= target,
                  "; ".join("%s vs %s" % (unit(p[i]), unit(m[i]))
                            for p, m in zip(predicted, measured)))


def tier_speed(bench):
    """Speed of ZeRO 3 with everything in the tier against the same model in memory and
    against the disk: per round, the calibrated disk bandwidth, the in-memory steps (ZeRO 1,
    the fastest layout in memory) with and without full recomputation, and the offloaded
    steps with and without it; the ratio of each offloaded step to max(in-memory step with
    the same recomputation, tier bytes per step / disk bandwidth), the median over rounds.
    A fully recomputed step runs forward twice wherever its states live: against the
    in-memory step without recomputation it would measure the recomputation, not the tier
    (that ratio is printed too)."""
    m = SPEED_GPT
    tier = bench.tmp / "tier_speed"
    tier.mkdir(exist_ok=True)
    steps = 5  # two warm-up steps dropped
    in_memory = {rc: one_rank_sets(m) + ["parallel.activation_checkpointing=%s"
                                         % ("full" if rc else "none")] for rc in (True, False)}
    offloaded = {rc: working_set_sets(tier, rc) for rc in (True, False)}
    ratios = {True: [], False: []}
    against_fastest = []
    detail = {True: [], False: []}
    predicted, measured = [], []
    for k in range(2):
        cluster, disk = calibrate(bench, tier)
        disk *= 1e9
        memory_step = {}
        for rc in (False, True):
            rows, _ = bench.trident(f"speed_memory_{'full' if rc else 'none'}.{k}", 1,
                                    in_memory[rc], model=m, steps=steps)
            memory_step[rc] = median_of([r["step_time_s"] for r in rows])
        for rc in (True, False):
            rows, _ = bench.trident(f"speed_tier_{'full' if rc else 'none'}.{k}", 1,
                                    offloaded[rc], model=m, steps=steps)
            step = median_of([r["step_time_s"] for r in rows])
            tier_bytes = median_of([r["tier"]["bytes"] for r in rows])
            blocked = median_of([r["tier"]["wait_s"] / r["step_time_s"] for r in rows])
            ratios[rc].append(step / max(memory_step[rc], tier_bytes / disk))
            if rc:
                against_fastest.append(step / max(memory_step[False], tier_bytes / disk))
            predicted.append(planned(bench, m, offloaded[rc], cluster))
            measured.append((step, max(r["peak_rss_bytes"] for r in rows)))
            detail[rc].append("step %.2f s, in memory %.2f s, %.2f GB / %.2f GB/s = %.2f s, "
                              "blocked %.2f" % (step, memory_step[rc], tier_bytes / 1e9,
                                                disk / 1e9, tier_bytes / disk, blocked))
    params = gpt_parameters(m)
    for rc in (True, False):
        r = median_of(ratios[rc])
        extra = ("; against the in-memory step without recomputation: %s"
                 % [round(x, 2) for x in against_fastest]) if rc else ""
        bench.add("offloaded step / max(in-memory step, tier bytes / calibrated disk bandwidth), "
                  "%.0fM params, ZeRO 3 with everything in the tier, %s recomputation (in "
                  "memory: the same recomputation)" % (params / 1e6, "full" if rc else "no"),
                  "%.2f" % r, "<= 1.5", r <= 1.5,
                  "rounds %s: %s%s" % ([round(x, 2) for x in ratios[rc]], "; ".join(detail[rc]),
                                       extra))
    prediction_row(bench, "%.0fM params, everything in the tier (with and without "
                   "recomputation, 2 rounds)" % (params / 1e6), predicted, measured)


def median_of(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")
