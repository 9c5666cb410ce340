#!/usr/bin/env bash
# scripts/scale.sh on emulated nodes: one layout (dp x tp 2) on 1 and 2 nodes of 2 ranks,
# and with --tp-across once more on 2 nodes with its tp groups across them, each twice
# (--repeat 2). Checks that every run trained, that each layout's row pools the steps of
# both its runs, that the table names nodes and placement, that the communication of
# each run lands on the side of the node boundary its groups are on (block on 2 nodes: tp
# inside, dp across; round robin: tp across, dp inside; 1 node: nothing across), and that
# no namespace or link is left behind. Where network namespaces cannot be made: skipped
# (exit 77), or failed under CI (netns_common.sh).
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
source "$root/tests/scripts/netns_common.sh"
require_netns tscale-probe
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
TRIDENT=$trident "$root/scripts/scale.sh" "$root/configs/tiny.toml" --nodes 1,2 --ranks-per-node 2 \
  --link-rate 1gbit --tp-across --steps 3 --repeat 2 --layouts "*,1,2" --cluster h100 --out "$out/scale" \
  > "$out/log" 2>&1 || fail "scale.sh failed: $(cat "$out/log")"
cat "$out/log"
ip netns list | grep -q "^tscale-node" && fail "a namespace is left: $(ip netns list)"
ip link show tscalebr >/dev/null 2>&1 && fail "the bridge is left"
[ "$(grep -c $'\tok\t' "$out/scale/runs.tsv")" -eq 6 ] ||
  fail "not 6 runs ok: $(cat "$out/scale/runs.tsv")"
/usr/bin/python3 - "$out/scale/scaling.csv" <<'PY' || exit 1
import csv, sys
rows = {(r["nodes"], r["placement"]): r for r in csv.DictReader(open(sys.argv[1]))}
def f(r, k): return float(r[k])
one, block, cyclic = rows[("1", "block")], rows[("2", "block")], rows[("2", "cyclic")]
problems = []
if f(one, "wait_inter_node_s") != 0: problems.append("1 node: time across nodes")
if not f(one, "wait_tp_s") > 0: problems.append("1 node: no tp time")
# Block on 2 nodes x 2: (dp 1 ranks 0,1 | dp 2 ranks 2,3): tp inside, dp across.
if not (f(block, "wait_inter_node_s") == f(block, "wait_dp_s") > 0): problems.append("block: dp not across")
if not (f(block, "wait_intra_node_s") >= f(block, "wait_tp_s") > 0): problems.append("block: tp not inside")
# Round robin: ranks 0,2 on node 0 and 1,3 on node 1: tp across, dp inside.
if not (f(cyclic, "wait_inter_node_s") >= f(cyclic, "wait_tp_s") > 0): problems.append("cyclic: tp not across")
if not (f(cyclic, "wait_intra_node_s") >= f(cyclic, "wait_dp_s")): problems.append("cyclic: dp not inside")
for r in rows.values():
    if not (f(r, "step_time_s") > 0 and f(r, "predicted_step_time_s") > 0):
        problems.append(f"no step time or prediction: {r}")
    # Two runs of 3 steps, the first step of each left out.
    if r["runs"] != "2" or r["steps_measured"] != "4" or len(r["step_time_runs_s"].split("/")) != 2:
        problems.append(f"the row does not pool two runs of two steps: {r}")
print("\n".join(problems) or "communication split as placed")
sys.exit(1 if problems else 0)
PY
grep -q "ranks to nodes" "$out/scale/scaling.md" || fail "scaling.md has no placement column"
echo PASS
