#!/usr/bin/env bash
# Checkpoint writes that fail, on 2 ranks (dp 2, ZeRO-1: each rank writes its part) of
# configs/tiny.toml:
# 1. an old step_N that cannot be removed (a mount point here; on NFS, the .nfs* file of a
#    file still open keeps its directory) does not end a run whose saves succeed: pruning
#    warns, naming it, prunes the others and the run ends with exit 0;
# 2. checkpoint.dir on a 4 MiB tmpfs, room for one checkpoint: the next save ends every
#    rank with one message naming the file and the lack of space; the save's .tmp_step_*
#    directory (every rank's part) is removed, and `latest` stays on the good step, which
#    verifies; the same with background saves (checkpoint.async);
# 3. `trident export` onto a 256 KiB tmpfs fails with a message and leaves nothing there.
# Mounting needs root: skipped (77) without it, except under CI, where every test must run.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
source "$root/tests/scripts/ci_common.sh"
[ "$(id -u)" -eq 0 ] || cannot_run "mounting a tmpfs needs root"
tmp=$(mktemp -d)
cleanup() {
  local m
  for m in "$tmp/prune/step_0" "$tmp/small" "$tmp/tiny"; do
    mountpoint -q "$m" && umount "$m"
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
train() {
  mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
    --set parallel.dp=2 --set parallel.zero_stage=1 --set train.steps=4 \
    --set train.log_every=1 --set logging.run_dir=none --set checkpoint.save_every=2 "$@"
}
mkdir -p prune/step_0 small tiny

# 1. An old checkpoint that cannot be removed.
mount -t tmpfs -o size=64k trident-prune-test prune/step_0 ||
  fail "cannot mount a tmpfs on $tmp/prune/step_0"
echo held >prune/step_0/.nfs000000000000000100000001
train --set checkpoint.dir=prune --set checkpoint.keep_last=1 >prune.log 2>&1 ||
  fail "a run whose old checkpoint could not be removed exited $?: $(grep -a error prune.log)"
grep -q "^warning: cannot remove prune/step_0 (pruning to checkpoint.keep_last = 1): .*; remove it by hand$" prune.log ||
  fail "no warning naming prune/step_0: $(grep -v '^step' prune.log | tail -3)"
[ "$(cat prune/latest)" = step_4 ] || fail "latest is '$(cat prune/latest)', not step_4"
[ -e prune/step_2 ] && fail "step_2 was not pruned beside the step_0 that could not be"

# 2. No room for the second save.
mount -t tmpfs -o size=4m trident-checkpoint-test small || fail "cannot mount a tmpfs on $tmp/small"
train --set checkpoint.dir=small/ck >full.log 2>&1
code=$?
[ $code -ne 0 ] || fail "a run whose save found no room exited 0"
[ "$(grep -c '^trident: error' full.log)" -eq 1 ] || fail "not one message: $(grep -a 'error' full.log)"
grep -q "^trident: error: .*cannot write checkpoint file small/ck/\.tmp_step_4_[0-9a-f]*/slices-dp[01]-pp0-tp0\.safetensors: No space left on device" full.log ||
  fail "no message naming the file and the lack of space: $(grep -a 'error' full.log)"
grep -q "^saved small/ck/step_2 " full.log || fail "step_2 was not saved: $(grep -v '^step' full.log | tail -3)"
left=$(ls -A small/ck | grep '^\.tmp_')
[ -z "$left" ] || fail "the failed save left $left, holding $(du -sh small/ck/.tmp_* | cut -f1) of the room"
[ "$(cat small/ck/latest)" = step_2 ] || fail "latest is '$(cat small/ck/latest)', not step_2"
"$trident" inspect small/ck --verify >inspect.log 2>&1 || fail "step_2 does not verify: $(cat inspect.log)"
# The same with background saves (checkpoint.async), in a directory of its own.
mv small/ck/step_2 ck-sync
train --set checkpoint.dir=small/async --set checkpoint.async=true >async.log 2>&1 &&
  fail "a run whose background save found no room exited 0"
[ "$(grep -c '^trident: error' async.log)" -eq 1 ] || fail "not one message: $(grep -a 'error' async.log)"
grep -q "No space left on device" async.log || fail "the background save's message: $(grep -a 'error' async.log)"
left=$(ls -A small/async | grep '^\.tmp_')
[ -z "$left" ] || fail "the failed background save left $left"
[ "$(cat small/async/latest)" = step_2 ] || fail "latest is '$(cat small/async/latest)', not step_2"

# 3. An export without room.
mount -t tmpfs -o size=256k trident-export-test tiny || fail "cannot mount a tmpfs on $tmp/tiny"
"$trident" export --in ck-sync --out tiny/hf --format hf >export.log 2>&1 &&
  fail "an export without room exited 0"
grep -q "No space left on device" export.log || fail "the export's message: $(cat export.log)"
[ -z "$(ls -A tiny)" ] || fail "the failed export left $(ls -A tiny)"
echo "checkpoint_write_faults: ok"
