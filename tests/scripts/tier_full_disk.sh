#!/usr/bin/env bash
# The nvme tier on a disk without room, 2 ranks (dp 2, ZeRO-1, optimizer states offloaded):
# a run that resumes from a good checkpoint with parallel.nvme_path on a 256 KiB tmpfs ends
# on every rank within parallel.timeout_s with one message naming the tier file and the key
# to change, exit 1, and leaves the checkpoints as they were: a resume with the tier on a
# disk with room continues from the same step. Mounting needs root: skipped (77) without it,
# except under CI, where every test must run.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
source "$root/tests/scripts/ci_common.sh"
[ "$(id -u)" -eq 0 ] || cannot_run "mounting a tmpfs needs root"
tmp=$(mktemp -d)
cleanup() { mountpoint -q "$tmp/small" && umount "$tmp/small"; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp"
mkdir -p small disk
mount -t tmpfs -o size=256k trident-tier-test small || fail "cannot mount a tmpfs on $tmp/small"
train() {  # $1: tier directory; the rest: --set overrides
  local tier=$1; shift
  mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$root/configs/tiny.toml" \
    --set parallel.dp=2 --set parallel.zero_stage=1 --set parallel.offload_optimizer=nvme \
    --set parallel.nvme_path="$tier" --set parallel.timeout_s=20 --set train.log_every=1 \
    --set logging.run_dir=run --set checkpoint.save_every=2 "$@"
}

train "$tmp/disk" --set train.steps=4 --set train.stop_at=4 >first.log 2>&1 || fail "first run: $(tail -5 first.log)"
before=$(cat run/checkpoints/step_4/index.json | md5sum)
start=$(date +%s)
train "$tmp/small" --set train.steps=8 --set checkpoint.load=auto >full.log 2>&1
code=$?
took=$(( $(date +%s) - start ))
[ $code -eq 1 ] || fail "the run on a full disk exited $code, not 1: $(tail -5 full.log)"
[ $took -le 20 ] || fail "the run on a full disk took $took s, more than parallel.timeout_s = 20"
grep -q "nvme tier: cannot reserve [0-9]* bytes for $tmp/small/rank[01].buffer[0-9]*.tier: No space left on device; check parallel.nvme_path" full.log ||
  fail "no message naming the tier file and parallel.nvme_path: $(grep -i error full.log | head -3)"
[ "$(grep -c 'trident: error' full.log)" -eq 1 ] || fail "not one message: $(grep 'trident: error' full.log)"
[ -z "$(ls -A small)" ] || fail "the tier left files on the full disk: $(ls -A small)"
[ "$(md5sum <run/checkpoints/step_4/index.json)" = "$before" ] || fail "the checkpoint changed"
train "$tmp/disk" --set train.steps=8 --set train.stop_at=6 --set checkpoint.load=auto >again.log 2>&1 ||
  fail "the resume with room: $(tail -5 again.log)"
grep -q "resumed from run/checkpoints/step_4 after step 4" again.log || fail "did not resume step 4: $(head -12 again.log)"
echo "full tier disk: exit 1 after $took s with one message; step_4 intact and resumed"
