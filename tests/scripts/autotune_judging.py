"""bench/autotune.py's judgement, with a fake trainer in place of trident: the best by the
median of a configuration's rounds, the confirmation rounds (who trains, how often, in
which order, and when they stop), the ratio against the configurations predicted to fit,
the binding old results are rendered with, and where a run is published (the docs' table,
the results file)."""
import sys
from pathlib import Path

ROOT = Path(sys.argv[1])
sys.path.insert(0, str(ROOT / "bench"))
import autotune  # noqa: E402

failures = []


def check(what, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (what, got, want))


def result(times, choice, top3, over_budget=()):
    r = {"case": "fake", "choice": choice, "top3": top3, "rounds": 3, "killed": [],
         "times": {c: list(t) for c, t in times.items()},
         "peaks": dict.fromkeys(times, 0), "cgroup_peaks": dict.fromkeys(times, 0),
         "predicted_grid": {c: [1.0, 1e8] for c in times if c not in over_budget}}
    autotune.judge(r)
    return r


class Trainer:
    """Each call returns the next time listed for that configuration, and logs it."""

    def __init__(self, times):
        self.times, self.calls = {c: list(t) for c, t in times.items()}, []

    def __call__(self, case, name, steps, cluster, auto):
        self.calls.append(name)
        return (self.times[name].pop(0), 1e8, 0), ""


# judge: the median of each configuration's rounds, not its fastest round.
r = result({"A": [1.00, 1.00, 1.00], "B": [0.80, 1.10, 1.20], "C": [0.95, 0.96, 0.97]},
           choice="A", top3=["A", "B"])
check("best by median", r["best"], "C")
check("choice / best", round(r["ratio"], 4), round(1.00 / 0.96, 4))
check("best in the top 3", r["in_top3"], False)
check("top 3's fastest / best", round(r["top3_ratio"], 4), round(1.00 / 0.96, 4))

# The confirmation: the best (C), the choice (A) and the top 3's fastest (A) train 3 rounds
# more, alternating their order; C's luck runs out, and A is the best on all its rounds.
autotune.train = Trainer({"C": [1.05, 1.06, 1.04], "A": [0.99, 1.00, 0.98]})
autotune.confirm_ties(None, r, 3, 5, None)
check("pass order", autotune.train.calls, ["A", "C", "C", "A", "A", "C"])
check("confirmed", r["confirmed"], ["C", "A"])
check("best after", r["best"], "A")
check("ratio after", r["ratio"], 1.0)
check("C's rounds", len(r["times"]["C"]), 6)
check("kept before", (r["before_confirm"]["best"], round(r["before_confirm"]["ratio"], 4)),
      ("C", round(1.00 / 0.96, 4)))

# A second pass: the best after the first (D, never confirmed) trains beside the choice;
# no pass when the choice is the best.
r = result({"A": [1.0] * 3, "C": [0.90] * 3, "D": [0.95] * 3}, choice="A", top3=["A"])
autotune.train = Trainer({"C": [1.2] * 3, "A": [1.0] * 6, "D": [1.1] * 3})
autotune.confirm_ties(None, r, 3, 5, None)
check("second pass", autotune.train.calls, ["A", "C", "C", "A", "A", "C", "A", "D", "D", "A",
                                            "A", "D"])
check("best after two passes", r["best"], "A")
r = result({"A": [0.9] * 3, "C": [1.0] * 3}, choice="A", top3=["A"])
autotune.train = Trainer({})
autotune.confirm_ties(None, r, 3, 5, None)
check("no pass when the choice is the best", ("confirmed" in r, autotune.train.calls),
      (False, []))

# Every configuration within NEAR of the best trains too, the choice among them or not:
# the choice (A) best by 3%, B's rounds more make B the best, already confirmed: one pass;
# C (10% slower, in the top 3 but not needed to judge it) never trains again.
r = result({"A": [1.00] * 3, "B": [1.03] * 3, "C": [1.10] * 3}, choice="A", top3=["A", "C"])
autotune.train = Trainer({"B": [0.95] * 3, "A": [1.00] * 3})
autotune.confirm_ties(None, r, 3, 5, None)
check("near tie beside the best choice", autotune.train.calls, ["B", "A", "A", "B", "B", "A"])
check("near tie settled", (r["best"], round(r["ratio"], 4), r.get("confirm_passes")),
      ("B", round(1.00 / 0.99, 4), 1))
check("judged before", r["before_confirm"]["best"], "A")

# Passes go on until the best has had its rounds more, however often it changes: N0-N4
# (within 5% of N0) train in the first pass and slow down, N5 becomes the best and trains
# in a second, and then the choice is the best.
times = {"A": [1.0] * 3}
times.update({"N%d" % i: [0.90 + 0.01 * i] * 3 for i in range(6)})
r = result(times, choice="A", top3=["A"])
autotune.train = Trainer({c: [1.5] * 3 if c != "A" else [1.0] * 6 for c in times})
autotune.confirm_ties(None, r, 3, 5, None)
check("passes until the best is confirmed", (r.get("confirm_passes"), sorted(r["confirmed"]), r["best"]),
      (2, sorted(times), "A"))
check("each trained its rounds once, the choice in every pass",
      sorted((c, autotune.train.calls.count(c)) for c in times),
      sorted([("A", 6)] + [("N%d" % i, 3) for i in range(6)]))

# Against the configurations predicted to fit: a faster one over the budget is left out.
r = result({"A": [1.0] * 3, "B": [0.9] * 3, "X": [0.8] * 3}, choice="A", top3=["A", "B"],
           over_budget=["X"])
ratio, in_top3 = autotune.within_budget(r)
check("within the budget", (round(ratio, 4), in_top3), (round(1.0 / 0.9, 4), True))

# The rank-sum test between two configurations' rounds, exact: 4 rounds all below 4 others
# is 2 of the 70 ways to deal 8 rounds into 4 and 4 (this order or its reverse); the same
# rounds on both sides are as far from told apart as can be; 3 against 3 never reaches 0.05.
check("rank sum, separated", autotune.rank_sum_p([1, 2, 3, 4], [5, 6, 7, 8]), 2 / 70)
check("rank sum, alike", autotune.rank_sum_p([1, 2, 3], [1, 2, 3]), 1.0)
check("rank sum, 3 against 3", autotune.rank_sum_p([1, 2, 3], [4, 5, 6]), 2 / 20)
# Only the misses are tested, each against the top 3's fastest (B; A and C have a round
# among X's, so that testing either would give another p).
r = result({"A": [0.515, 1.01, 1.02, 1.03], "B": [0.95, 0.96, 0.97, 0.98],
            "C": [0.505, 0.99, 0.99, 0.99], "X": [0.5, 0.51, 0.52, 0.53]},
           choice="A", top3=["A", "B", "C"])
hit = result({"A": [1.0] * 3, "B": [1.1] * 3}, choice="A", top3=["A", "B"])
check("misses told apart", autotune.misses_told_apart([r, hit]), [2 / 70])

# train --auto --measure K: its printed timings read back, the one it kept judged on the
# grid's medians: kept the predicted #1 (A, not the best) in one case and the measured best
# (C, D) in two; a case whose launch failed is left out of the figures and named in the grid.
printed = ("auto: measured #1 dp2 pp1 tp1 zero1 mb8, in memory: 0.950 s a step (predicted 0.900 s, -5.3%)\n"
           "auto: measured #2 dp2 pp1 tp1 zero2 mb8: 0.940 s a step (predicted 0.910 s, -3.2%)\n"
           "auto: chose #2, the fastest measured of 2 (the predicted best, #1, took 1.1% longer)\n")
pick = autotune.read_pick(printed, 2)
check("measure: kept", pick["picked"], "dp2 pp1 tp1 zero2 mb8, in memory")
check("measure: timings", pick["timings"], {"dp2 pp1 tp1 zero1 mb8, in memory": 0.95,
                                            "dp2 pp1 tp1 zero2 mb8, in memory": 0.94})
first = result({"A": [1.0] * 3, "B": [0.9] * 3}, choice="A", top3=["A", "B"])
first["measure"] = {"k": 2, "picked": "A", "timings": {"A": 0.9, "B": 0.95}}
best = result({"A": [1.0] * 3, "C": [0.8] * 3}, choice="A", top3=["A", "C"])
best["measure"] = {"k": 2, "picked": "C", "timings": {"A": 0.9, "C": 0.85}}
also = result({"A": [1.0] * 3, "D": [0.95] * 3}, choice="A", top3=["A", "D"])
also["measure"] = {"k": 2, "picked": "D", "timings": {"A": 0.9, "D": 0.85}}
failed = result({"A": [1.0] * 3}, choice="A", top3=["A"])
failed["measure"] = {"k": 2, "failed": "killed"}
n, k, kept_first, kept_best, ratios = autotune.measure_summary([first, best, also, failed])
check("measure: summary", (n, k, kept_first, kept_best), (3, "2", 1, 2))
check("measure: pick / best", [round(x, 4) for x in ratios], [1.0, 1.0, round(1.0 / 0.9, 4)])
for r in (first, best, also, failed):  # what the table's row reads
    r.update(spec={"ranks": 2, "model": ["model.layers=2", "model.hidden=64", "model.heads=2",
                                         "model.seq_len=32", "model.vocab=128",
                                         "train.global_batch_size=4"]},
             predicted=1.0, predicted_peak=1e8)
text = autotune.markdown([first, best, also, failed], 3, 5, "core")
check("measure: rendered", "kept the predicted #1 in 1 of 3 cases and the measured best in 2; "
      "its pick / best by the grid's medians: median 1.000, worst 1.111." in text, True)
check("measure: failed launch named", "    train --auto --measure 2 failed" in text, True)

# Publishing: the docs' table between its markers without the grids; the results file
# gains the run with its grids under a heading of date, code and cases, run after run.
import contextlib  # noqa: E402
import io  # noqa: E402
import tempfile  # noqa: E402
for r in (first, best, also, failed):
    r.update(date="2026-12-07", case=r["case"])
with tempfile.TemporaryDirectory() as tmp:
    doc, results = Path(tmp) / "doc.md", Path(tmp) / "results.md"
    doc.write_text("head\n<!-- autotune:begin -->\nold\n<!-- autotune:end -->\ntail\n")

    class Args:
        rounds, steps, bind, markdown, results = 3, 5, "core", str(doc), str(results)
    with contextlib.redirect_stdout(io.StringIO()):  # publish prints the run too
        autotune.publish(Args, [first, best])
        autotune.publish(Args, [also])
    shown = doc.read_text()
    check("docs: the table replaced", ("old" in shown, shown.count("| case | choice |"),
                                       shown.startswith("head\n<!-- autotune:begin -->\n"),
                                       shown.endswith("<!-- autotune:end -->\ntail\n")),
          (False, 1, True, True))
    check("docs: no grids", "<details>" in shown, False)
    kept = results.read_text()
    headings = [l for l in kept.splitlines() if l.startswith("### ")]
    check("results: one heading a run", [h.split(": ")[-1] for h in headings],
          ["fake, fake", "fake"])
    check("results: dated, with the code", all(h.startswith("### 2026-12-07, code ")
                                                for h in headings), True)
    also["code"] = "code abc1234"  # stored results keep the code they measured
    with contextlib.redirect_stdout(io.StringIO()):
        autotune.publish(Args, [also])
    last = [l for l in results.read_text().splitlines() if l.startswith("### ")][-1]
    check("results: the stored code", last, "### 2026-12-07, code abc1234: fake")
    check("results: grids kept", kept.count("<details><summary>The measured grids"), 2)

# Results from before the binding was recorded ran unbound.
check("old results' binding", autotune.measured_how([{"date": "d"}], 3, 5, "core")[3], "none")
check("recorded binding", autotune.measured_how([{"bind": "core"}], 3, 5, "none")[3], "core")

for f in failures:
    print("FAIL", f)
print("%d checks failed" % len(failures) if failures else "autotune judging: all checks pass")
sys.exit(1 if failures else 0)
