#!/usr/bin/env bash
# trident under a real Slurm (scripts/slurm.sh): 2 emulated nodes of 4 CPUs, slurmctld and a
# slurmd per node, munge. `srun --mpi=pmix` starts 8 tasks of the dp2 x pp2 x tp2 ZeRO-2
# parity layout, which reproduce the single-process run to 1e-10 in fp64 (test_mpi's
# check); scripts/scale.sh --slurm runs a layout as an sbatch job, and trident's header
# names the two nodes from the tasks' host names. Then `down`, with a job still running,
# leaves no daemon, namespace, link or state behind. Where network namespaces cannot be
# made: skipped (exit 77), or failed under CI (netns_common.sh).
set -u
trident=$1 root=$2
test_mpi=$(dirname "$trident")/tests/test_mpi
name=tsl$$
slurm() { "$root/scripts/slurm.sh" "$@"; }
fail() { echo "FAIL: $*"; slurm down --name "$name"; exit 1; }

source "$root/tests/scripts/netns_common.sh"
require_netns "$name-probe"
trap 'slurm down --name "$name"' EXIT

slurm up --name "$name" --nodes 2 --cpus 4 || fail "slurm.sh up failed"
pids=$(pgrep -f "slurm.*$name-slurm/slurm.conf|munged.*$name-slurm" | tr '\n' ' ')
[ "$(echo $pids | wc -w)" -ge 4 ] || fail "not slurmctld, 2 slurmd and munged running: $pids"

out=$(slurm run --name "$name" srun --mpi=pmix -N 2 -n 8 --ntasks-per-node 4 "$test_mpi" \
  --gtest_filter='Layouts/Parity.*/dp2_pp2_tp2_1f1b_ckpt_zero2' 2>&1)
code=$?
[ $code -eq 0 ] || fail "srun of the parity layout exited $code:
$out"
[ "$(echo "$out" | grep -ac 'PASSED.*1 test\.')" -eq 8 ] || fail "not 8 tasks passed:
$out"
echo "$out" | grep -a "final weights differ" | head -1

# trident train under srun, as scripts/scale.sh --slurm runs it: one sbatch job for the node
# count, which starts the layout with srun inside its allocation.
tmp=$(mktemp -d)
SLURM_CLIENT="$root/scripts/slurm.sh run --name $name" TRIDENT=$trident "$root/scripts/scale.sh" \
  "$root/configs/tiny.toml" --slurm --nodes 2 --ranks-per-node 4 --layouts 2,2,2 --steps 2 \
  --out "$tmp/scale" >"$tmp/scale.log" 2>&1 || fail "scale.sh --slurm failed: $(tail -5 "$tmp/scale.log")"
row=$(awk -F'\t' 'NR == 2 {print $1, $2, $3, $4, $11, $13}' "$tmp/scale/runs.tsv")
[ "$row" = "8 2 2 2 ok 2" ] || fail "scale.sh --slurm: runs.tsv row '$row', not '8 2 2 2 ok 2'"
out=$(cat "$tmp"/scale/runs/*/train.log)
rm -rf "$tmp"
echo "$out" | grep -q "^placement: 2 nodes x 4 ranks: tp inside nodes, dp inside nodes, pp across nodes$" ||
  fail "no placement line naming the two nodes: $out"
echo "scale.sh --slurm: $(echo "$out" | grep -a '^placement')"

# As after a failure: `down` while a job's tasks still run on both nodes. Their command
# line is this run's own (its pid in the duration): a plain `sleep 300` elsewhere on the
# machine once passed for a third task.
task="sleep 300.$$"
slurm run --name "$name" sbatch -N 2 -n 2 -o /dev/null --wrap "srun $task" >/dev/null ||
  fail "sbatch of the job left running"
for _ in $(seq 100); do
  tasks=$(pgrep -f "^[^ ]*$task\$" | tr '\n' ' ')
  [ "$(echo $tasks | wc -w)" -eq 2 ] && break
  sleep 0.1
done
[ "$(echo $tasks | wc -w)" -eq 2 ] || fail "the job's 2 tasks did not start: '$tasks'"
pids="$pids$tasks"
slurm down --name "$name"
trap - EXIT
[ -z "$(ip netns list | grep "^$name-")" ] || fail "namespaces left behind"
ip link show "${name}br" >/dev/null 2>&1 && fail "bridge left behind"
for pid in $pids; do  # a zombie (state Z) has exited; only its parent has not reaped it
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
  [ -n "$state" ] && [ "$state" != Z ] && fail "daemon or task $pid ($(tr '\0' ' ' </proc/$pid/cmdline)) left running"
done
[ ! -e "/tmp/$name-slurm" ] || fail "state directory left behind"
echo "slurm_cluster: ok (daemons and running tasks ${pids}gone)"
