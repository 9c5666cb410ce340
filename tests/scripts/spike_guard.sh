#!/usr/bin/env bash
# The loss-spike guard and runs that diverge, on 2 ranks (dp 2, fp64) of configs/tiny.toml:
# 1. guard on and off train the healthy steps bit for bit alike, and the guard never fires
#    (steps 1-44 of the run of item 2, healthy until batch 45, against a run without it);
# 2. corrupted batches 45-46 (TRIDENT_DATA_FAULT) spike and are skipped, the second in a row
#    rolls back to step 44 and leaves batches 45-46 out, logged in metrics.jsonl; a lone
#    corrupted batch 51 is skipped and the checkpoint saved right after it is not marked
#    good; from the rollback on the run matches, bit for bit, one that left batches 45-46
#    out from the start (data.skip), final checkpoint included;
# 3. optimizer.lr = 1e4 with the guard off runs into non-finite steps and its last step is
#    skipped: exit 1 with the reason, not 0; preempted right after its first non-finite
#    step, it saves nothing (those weights gave the non-finite loss); with the guard on the
#    job stops with a message.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
train() {  # $1: run directory; the rest: --set overrides
  local dir=$1; shift
  mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
    --set parallel.dp=2 --set train.precision=fp64 --set train.log_every=1 \
    --set train.global_batch_size=16 --set train.micro_batch_size=4 \
    --set optimizer.lr=1e-2 --set optimizer.warmup_steps=5 --set logging.run_dir="$dir" "$@"
}

# 2. Corrupted batches: skipped, rolled back, left out.
common=(--set train.steps=60 --set checkpoint.save_every=2 --set guard.rollback_after=2)
TRIDENT_DATA_FAULT=45-46,51 train spiked "${common[@]}" >spiked.log 2>&1 ||
  fail "the run with corrupted batches: $(tail -5 spiked.log)"

# 1. The healthy steps before batch 45: the guard does not change a bit of them. Without the
# guard, the same schedule of 60 steps, stopped after step 44 (train.stop_at).
train off --set train.steps=60 --set train.stop_at=44 --set guard.enabled=false >off.log 2>&1 ||
  fail "guard off: $(tail -5 off.log)"
python3 - spiked/metrics.jsonl off/metrics.jsonl <<'PY' || fail "guard on and off differ"
import json, sys
on, off = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert [r["step"] for r in off] == list(range(1, 45)), [r["step"] for r in off]
for a, b in zip(on[:44], off):
    assert a["step"] == b["step"], (a, b)
    assert a["loss"] == b["loss"] and a["grad_norm"] == b["grad_norm"], (a, b)
    assert not a["skipped"] and "spike" not in a and not b["skipped"], (a, b)
print("guard on and off: 44 losses bit for bit alike, no step skipped")
PY
grep -q "rolled back to spiked/checkpoints/step_44 after 2 skipped steps in a row; batches 45-46 of the data are left out" spiked.log ||
  fail "no rollback line: $(grep -v '^step' spiked.log | tail -5)"
TRIDENT_DATA_FAULT=45-46,51 train skipped "${common[@]}" --set data.skip=45-46 >skipped.log 2>&1 ||
  fail "the run that leaves batches 45-46 out: $(tail -5 skipped.log)"
python3 - spiked skipped <<'PY' || fail "the rolled-back run"
import json, sys
spiked, skipped = ([json.loads(l) for l in open(d + "/metrics.jsonl")] for d in sys.argv[1:])
# Steps 45 and 46 spiked on batches 45 and 46; 46 rolled back to 44.
assert [r["step"] for r in spiked] == list(range(1, 47)) + list(range(45, 61)), [r["step"] for r in spiked]
assert [r["step"] for r in spiked[:44] if r["skipped"]] == [], "a healthy step was skipped"
for r in spiked[44:46]:
    assert r["skipped"] and "spike" in r, r
rb = spiked[45]["rollback"]
assert rb["to_step"] == 44 and rb["left_out"] == [45, 46], rb
# After it, steps 45.. train on batches 47..; batch 51 (step 49) spikes once, alone.
after = spiked[46:]
assert [r["data_batch"] for r in after] == list(range(47, 63)), [r["data_batch"] for r in after]
assert [r["step"] for r in after if r["skipped"]] == [49], after
# The run that left 45-46 out from the start: the same steps from 45 on, bit for bit.
assert [r["step"] for r in skipped] == list(range(1, 61))
for a, b in zip(after, skipped[44:]):
    for k in ("loss", "grad_norm", "skipped", "data_batch"):
        assert a[k] == b[k], (k, a, b)
print("spikes", [(r["step"], round(r["loss"], 3)) for r in spiked if r["skipped"]],
      "rolled back to 44; steps 45-60 match the run that skipped 45-46 bit for bit")
def index(d, step):
    return json.load(open(f"{d}/checkpoints/step_{step}/index.json"))
for d in sys.argv[1:]:
    good = {s: index(d, s)["trainer"]["guard"]["good"] for s in range(2, 61, 2)}
    # Saved one step after the lone spike at 49: not one to roll back to.
    assert good == {s: s != 50 for s in good}, (d, good)
a, b = index("spiked", 60), index("skipped", 60)
assert a["files"] == b["files"], "final checkpoints differ"
assert a["trainer"]["skipped_data"] == [[45, 46]], a["trainer"]["skipped_data"]
print("final checkpoints byte-identical (xxh64 of every file); step_50 not marked good")
PY

# 3. Divergence. With the guard off the last steps are non-finite and skipped: exit 1.
train diverge-off --set train.steps=40 --set optimizer.lr=1e4 --set optimizer.grad_clip=0 \
  --set train.max_skipped_steps=100 --set guard.enabled=false --set checkpoint.save_every=1 \
  >diverge-off.log 2>&1
code=$?
[ $code -eq 1 ] || fail "a run that ended on skipped steps exited $code: $(tail -3 diverge-off.log)"
grep -q "the run ended on a skipped step: steps [0-9]* to 40 were skipped" diverge-off.log ||
  fail "no reason given: $(grep -v '^step' diverge-off.log | tail -3)"
# Preempted right after its first non-finite step S (TRIDENT_PREEMPT_AFTER): step S trained
# nothing and its weights are those of step S-1, which just gave a non-finite loss. Nothing
# is saved, so "auto" resumes from step S-2, the newest save before them.
first=$(python3 -c "import json,sys; print(next(r['step'] for r in map(json.loads, open(sys.argv[1])) if r['skipped']))" diverge-off/metrics.jsonl)
[ "$first" -ge 3 ] || fail "the diverging run skipped step $first, too early to test a preemption"
TRIDENT_PREEMPT_AFTER=$first train preempt-skipped --set train.steps=40 --set optimizer.lr=1e4 \
  --set optimizer.grad_clip=0 --set train.max_skipped_steps=100 --set guard.enabled=false \
  --set checkpoint.save_every=1 --set checkpoint.preempt_exit_code=75 >preempt-skipped.log 2>&1
code=$?
[ $code -eq 75 ] || fail "the run preempted at skipped step $first exited $code: $(grep -v "^step\|^saved\|^-\|^ " preempt-skipped.log | tail -4)"
grep -q "^preempted at step $first by SIGTERM, nothing saved (step $first was skipped: its weights gave a non-finite loss); the newest save is preempt-skipped/checkpoints/step_$((first - 2)); exit code 75$" preempt-skipped.log ||
  fail "no preemption line naming the skipped step: $(grep '^preempted' preempt-skipped.log)"
ck=preempt-skipped/checkpoints
[ -e "$ck/step_$first" ] && fail "the preemption saved step $first, whose weights gave a non-finite loss"
[ "$(cat "$ck/latest")" = "step_$((first - 2))" ] || fail "latest is '$(cat "$ck/latest")', not step_$((first - 2))"
newest=$(ls "$ck" | sed -n 's/^step_\([0-9]*\)$/\1/p' | sort -n | tail -1)
[ "$newest" = $((first - 2)) ] || fail "\"auto\" would resume from step $newest, not $((first - 2))"

# With the guard on, the same run stops: spikes, rollbacks, then the message.
train diverge-on --set train.steps=40 --set optimizer.lr=1e4 --set optimizer.grad_clip=0 \
  --set checkpoint.save_every=1 >diverge-on.log 2>&1
code=$?
[ $code -eq 1 ] || fail "the diverging run with the guard exited $code: $(tail -3 diverge-on.log)"
grep -q "training diverged" diverge-on.log || fail "no divergence message: $(tail -3 diverge-on.log)"
python3 - diverge-on/metrics.jsonl <<'PY' || fail "the guarded divergence"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows[-1]["step"] < 40, "the guard let the run go to the end"
print("guarded divergence stopped after", len(rows), "logged steps,",
      sum("rollback" in r for r in rows), "rollbacks")
PY
echo "spike guard: all checks passed"
