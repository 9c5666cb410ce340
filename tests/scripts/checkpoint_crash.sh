#!/usr/bin/env bash
# Crash safety of checkpoint saving, and bad checkpoints refused before training: a run
# killed while writing step 4's files (fault-injection hook TRIDENT_CHECKPOINT_FAULT) or
# after renaming it but before moving `latest` leaves `latest` on step 2, which verifies,
# loads and continues to the uninterrupted run's losses; keep_last prunes; a flipped byte,
# a missing file, a model that differs from the config and an unknown format version each
# stop every rank with one message naming the problem; a second run given the checkpoint.dir
# of a running one is refused by name before training, and stale locks are taken over.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train() {
  mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
    --set parallel.dp=2 --set parallel.zero_stage=1 --set train.steps=6 \
    --set train.log_every=1 --set train.threads=1 --set logging.run_dir=none "$@"
}
losses() {  # the losses of steps $2.. of the metrics file $1, one per line
  python3 -c "import json,sys; [print(repr(r['loss'])) for r in map(json.loads, open(sys.argv[1])) if r['step'] >= int(sys.argv[2])]" "$1" "$2"
}
ck=$tmp/ck

train --set logging.metrics="$tmp/full.jsonl" >"$tmp/full.log" 2>&1 || fail "reference run: $(cat "$tmp/full.log")"

# Killed in the middle of writing the files of step 4.
TRIDENT_CHECKPOINT_FAULT=mid_file@4 train --set checkpoint.dir="$ck" --set checkpoint.save_every=2 \
  >"$tmp/crash1.log" 2>&1 && fail "a run killed while saving exited 0"
grep -q "TRIDENT_CHECKPOINT_FAULT: killing this rank at mid_file of the save of step 4" "$tmp/crash1.log" ||
  fail "the fault was not injected: $(cat "$tmp/crash1.log")"
[ "$(cat "$ck/latest")" = step_2 ] || fail "latest is '$(cat "$ck/latest")' after a crash saving step 4"
[ -e "$ck/step_4" ] && fail "a partial step_4 is visible"
ls -d "$ck"/.tmp_step_4_* >/dev/null 2>&1 || fail "no partial temporary directory: the crash was not mid-save"
"$trident" inspect "$ck" --verify >"$tmp/inspect.log" 2>&1 || fail "step_2 does not verify: $(cat "$tmp/inspect.log")"
grep -q "^step 2$" "$tmp/inspect.log" || fail "inspect of latest is not step 2: $(cat "$tmp/inspect.log")"

# Killed after step 4's rename, before `latest` moved (and step_2 saved a second time).
TRIDENT_CHECKPOINT_FAULT=before_latest@4 train --set checkpoint.dir="$ck" --set checkpoint.save_every=2 \
  >"$tmp/crash2.log" 2>&1 && fail "a run killed before updating latest exited 0"
[ "$(cat "$ck/latest")" = step_2 ] || fail "latest moved to '$(cat "$ck/latest")' before the crash point"
[ -f "$ck/step_4/index.json" ] || fail "step_4 was renamed into place without its index"

# Resuming from latest continues exactly as the uninterrupted run.
train --set checkpoint.dir="$ck" --set checkpoint.save_every=2 --set checkpoint.load=latest \
  --set logging.metrics="$tmp/resumed.jsonl" >"$tmp/resume.log" 2>&1 || fail "resume: $(cat "$tmp/resume.log")"
grep -q "resumed from latest" "$tmp/resume.log" || fail "no resume line: $(cat "$tmp/resume.log")"
grep -q "^step 3/6" "$tmp/resume.log" || fail "the resumed run did not start at step 3: $(cat "$tmp/resume.log")"
grep -q "^step 2/6" "$tmp/resume.log" && fail "the resumed run repeated step 2"
[ "$(losses "$tmp/resumed.jsonl" 3)" = "$(losses "$tmp/full.jsonl" 3)" ] ||
  fail "resumed losses differ: $(losses "$tmp/resumed.jsonl" 3) vs $(losses "$tmp/full.jsonl" 3)"
[ "$(cat "$ck/latest")" = step_6 ] || fail "latest is not step_6 after the resumed run"
ls -a "$ck" | grep -q "^\.tmp_\|^\.old_" && fail "leftovers after a good save: $(ls -a "$ck")"

# keep_last = 2 keeps the newest two.
train --set checkpoint.dir="$tmp/keep" --set checkpoint.save_every=1 --set checkpoint.keep_last=2 \
  >"$tmp/keep.log" 2>&1 || fail "keep_last run: $(cat "$tmp/keep.log")"
[ "$(ls "$tmp/keep" | tr '\n' ' ')" = "latest step_5 step_6 " ] || fail "keep_last=2 left: $(ls "$tmp/keep")"

# Bad checkpoints: one message naming the problem, non-zero exit, no training.
refused() {  # $1: text the message must hold; the rest: arguments of train
  local want=$1
  shift
  local out code
  out=$(train "$@" 2>&1)
  code=$?
  [ $code -ne 0 ] || fail "loading a bad checkpoint exited 0 ($want)"
  [ "$(echo "$out" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message ($want): $out"
  echo "$out" | grep '^trident: error:' | grep -q -- "$want" || fail "the message does not say '$want': $out"
  echo "$out" | grep -q "^step " && fail "training started from a bad checkpoint ($want): $out"
  return 0
}
cp -r "$ck/step_6" "$tmp/corrupt"
python3 - "$tmp/corrupt/slices-dp1-pp0-tp0.safetensors" <<'PY'
import os, sys
path = sys.argv[1]
with open(path, "r+b") as f:
    f.seek(os.path.getsize(path) - 100)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0x01]))
PY
refused "corrupt/slices-dp1-pp0-tp0.safetensors fails its checksum" --set checkpoint.load="$tmp/corrupt"
cp -r "$ck/step_6" "$tmp/missing"
rm "$tmp/missing/slices-dp0-pp0-tp0.safetensors"
refused "missing/slices-dp0-pp0-tp0.safetensors is missing" --set checkpoint.load="$tmp/missing"
refused "was written for model.hidden = 64 but the config has model.hidden = 32" \
  --set checkpoint.load="$ck/step_6" --set model.hidden=32
cp -r "$ck/step_6" "$tmp/future"
sed -i 's/"format_version": 1,/"format_version": 99,/' "$tmp/future/index.json"
refused "has format version 99; this trident reads format version 1" --set checkpoint.load="$tmp/future"
refused "no checkpoint was saved in" --set checkpoint.load=latest --set checkpoint.dir="$tmp/empty"

# Two runs given one checkpoint.dir: the second is refused by name before training, on
# every rank with one message; the first keeps going. A run's lock goes when it ends, and
# a stale one (its process gone from this host; or an earlier start of this Slurm job, on
# any host) is taken over.
source "$root/tests/scripts/signal_common.sh"
two=$tmp/two
train --set checkpoint.dir="$two" --set train.steps=100000 --set checkpoint.save_every=0 \
  --set checkpoint.preempt_exit_code=75 >"$tmp/first.log" 2>&1 &
first=$!
launcher=
for _ in $(seq 100); do launcher=$(pgrep -P $first -x mpirun) && break; sleep 0.1; done
[ -n "$launcher" ] || fail "the first run's mpirun did not start"
trap 'kill -TERM $launcher 2>/dev/null; rm -rf "$tmp"' EXIT  # a failed check ends it too
rank0=$(wait_for_rank "$launcher" 0)
for _ in $(seq 200); do grep -q "^step 1/" "$tmp/first.log" && break; sleep 0.1; done
grep -q "^step 1/" "$tmp/first.log" || fail "the first run did not start: $(tail -3 "$tmp/first.log")"
refused "checkpoint.dir $two is in use by another run (host $(hostname), pid $rank0; its lock $two/.lock)" \
  --set checkpoint.dir="$two"
kill -0 $first 2>/dev/null || fail "the first run ended beside the refused one: $(tail -3 "$tmp/first.log")"
kill -TERM "$rank0"
wait $first
code=$?
[ $code -eq 75 ] || fail "the first run exited $code after its preemption: $(tail -3 "$tmp/first.log")"
[ -e "$two/.lock" ] && fail "the first run left its lock: $(cat "$two/.lock")"
dead=$(sh -c 'echo $$')
echo "{\"host\": \"$(hostname)\", \"pid\": $dead, \"start\": 1, \"job\": \"\"}" >"$two/.lock"
train --set checkpoint.dir="$two" --set checkpoint.load=auto --set train.steps=2 >"$tmp/stale.log" 2>&1 ||
  fail "a run refused a stale lock: $(grep error "$tmp/stale.log")"
grep -q "^checkpoint.dir: took over the lock of host $(hostname), pid $dead, which has ended$" "$tmp/stale.log" ||
  fail "no line naming the stale lock: $(grep -v '^step' "$tmp/stale.log" | tail -3)"
echo '{"host": "another-node", "pid": 1, "start": 1, "job": "4242"}' >"$two/.lock"
refused "in use by another run (host another-node, pid 1, job 4242;" --set checkpoint.dir="$two"
SLURM_JOB_ID=4242 train --set checkpoint.dir="$two" --set train.steps=2 \
  --set checkpoint.load=auto >"$tmp/requeued.log" 2>&1 || fail "a requeued job refused its own lock: $(grep error "$tmp/requeued.log")"
grep -q "^checkpoint.dir: took over the lock of host another-node, pid 1, job 4242, which has ended$" "$tmp/requeued.log" ||
  fail "no line naming the requeued job's lock: $(grep -v '^step' "$tmp/requeued.log" | tail -3)"
[ -e "$two/.lock" ] && fail "a finished run left its lock: $(cat "$two/.lock")"
echo "checkpoint_crash: ok"
