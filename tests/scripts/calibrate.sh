#!/usr/bin/env bash
# `trident calibrate` end to end, one ctest entry per half:
#   calibrate.sh TRIDENT ROOT one   on one node of 2 ranks;
#   calibrate.sh TRIDENT ROOT two   on 2 emulated nodes of 2 ranks, which need network
#                                   namespaces: skipped (exit 77) where none can be made,
#                                   failed under CI (netns_common.sh).
# Each cluster file must load in `trident plan`, hold positive measured rates (on one
# node the tier's disk and its stream of an AdamW step too, measured under the test's
# directory), a [contention] entry per rank count measured and, across nodes, the
# inter-node tables (one way, exchange and a ring's step) and the machine's shared cores;
# across the shaped link the gradient reductions timed beside a block are sized down from
# 64 MiB. On one node the file then drives `trident train --auto`.
set -u
trident=$1 root=$2 half=${3:-}
case "$half" in
  one | two) ;;
  *) echo "usage: calibrate.sh TRIDENT ROOT one|two"; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
name=tcal$$
trap '"$root/scripts/cluster.sh" down --name "$name" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
key() { sed -n "s/^$1 = //p" "$2" | head -1; }
positive() { awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }

check_file() {  # FILE: what every calibration must hold
  local f=$1
  [ -s "$f" ] || fail "no cluster file $f"
  "$trident" plan "$root/configs/tiny.toml" --cluster "$f" --layout 1,1,2 > "$tmp/plan.txt" 2>&1 ||
    fail "trident plan cannot use $f: $(cat "$tmp/plan.txt")"
  for k in intra_node_gbps memory_gbps adamw_ns_per_element layer_overhead_us layer_overhead_tp_us; do
    positive "$(key $k "$f")" || fail "$k is not positive in $f"
  done
  grep -q '^\[contention\]' "$f" || fail "no [contention] in $f"
  grep -q '^"2" = ' "$f" || fail "no contention at 2 ranks in $f"
  awk -F' = ' '/^sync_us/ { exit !($2 >= 0) }' "$f" || fail "sync_us missing or negative in $f"
  local drift; drift=$(key sync_fraction "$f")
  awk -v x="$drift" 'BEGIN { exit !(x != "" && x >= 0 && x < 1) }' ||
    fail "sync_fraction is missing or not in [0, 1) in $f: '$drift'"
  [ "$(key collectives "$f")" = '"mpi"' ] || fail "collectives is not \"mpi\" in $f"
}

one_node() {
  mpirun -np 2 --oversubscribe --bind-to none "$trident" calibrate --threads 1 --rounds 1 --quick \
    --disk-dir "$tmp" --out "$tmp/one.toml" > "$tmp/one.log" 2>&1 || fail "calibrate failed: $(cat "$tmp/one.log")"
  check_file "$tmp/one.toml"
  # The tier's disk, here under the test's own directory: each direction, beside a block,
  # and the tier's own stream of an AdamW step, which takes longer than the step in memory.
  for k in disk_read_gbps disk_write_gbps tier_stream_s_per_gb; do
    positive "$(key $k "$tmp/one.toml")" || fail "$k is not positive in $tmp/one.toml"
  done
  # disk_overlap defaults to 1 and is clamped, so its value proves nothing: the log shows
  # that the passes beside the block ran.
  grep -q "disk beside a block .*: disk_overlap [0-9]" "$tmp/one.log" ||
    fail "no disk_overlap measurement in $tmp/one.log"
  # Both gradient reductions timed beside a block, each figure written from its own line.
  for k in all-reduce reduce-scatter; do
    grep -q "^# $k of 64 MiB over 2 ranks beside block .*: hidden [0-9.]*$" "$tmp/one.log" ||
      fail "no $k beside a block in $tmp/one.log"
  done
  hidden() { sed -n "s/^# $1 of .*: hidden //p" "$tmp/one.log"; }
  near() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a - b < 0.006 && b - a < 0.006) }'; }
  near "$(key dp_overlap "$tmp/one.toml")" "$(hidden reduce-scatter)" ||
    fail "dp_overlap is not the reduce-scatter's hidden share in $tmp/one.toml"
  near "$(key all_reduce_overlap "$tmp/one.toml")" "$(hidden all-reduce)" ||
    fail "all_reduce_overlap is not the all-reduce's hidden share in $tmp/one.toml"
  [ "$(key devices_per_node "$tmp/one.toml")" = 2 ] || fail "one node: devices_per_node is not 2"
  [ "$(key machine_cores "$tmp/one.toml")" = 0 ] || fail "one node: machine_cores set"
  grep -q '^\[inter_sendrecv_us\]' "$tmp/one.toml" && fail "one node: an inter-node table"
  echo "one node: ok"
  train_auto "$tmp/one.toml"
}

# What a calibration is for: `train --auto` (here parallel.auto = true, timing the best two
# with --measure 2) chooses on it, prints the choice and writes the resolved config, which
# trains the same run again bit for bit; a budget nothing fits in ends the job with the
# change that would fit.
train_auto() {
  local cluster=$1 run=(mpirun -np 2 --oversubscribe --bind-to none "$trident" train
    "$root/configs/tiny.toml" --set train.steps=3 --set train.log_every=1 --set train.threads=1)
  "${run[@]}" --set parallel.auto=true --measure 2 --cluster "$cluster" --set logging.run_dir="$tmp/auto" \
    > "$tmp/auto.log" 2>&1 || fail "train --auto: $(tail -5 "$tmp/auto.log")"
  grep -q '^auto: chose dp' "$tmp/auto.log" || fail "train --auto printed no choice: $(head -5 "$tmp/auto.log")"
  [ "$(grep -c '^auto: measured #[12] dp.*: [0-9.]* s a step (predicted [0-9.]* s' "$tmp/auto.log")" = 2 ] ||
    fail "--measure 2 timed no two configurations: $(grep '^auto' "$tmp/auto.log")"
  grep -q '^auto: chose #[12], the fastest measured of 2' "$tmp/auto.log" ||
    fail "--measure 2 chose none: $(grep '^auto' "$tmp/auto.log")"
  grep -q '^auto = false' "$tmp/auto/resolved_config.toml" ||
    fail "the resolved config chooses again (parallel.auto is not false)"
  [ -s "$tmp/auto/resolved_config.toml" ] || fail "train --auto wrote no resolved_config.toml"
  mpirun -np 2 --oversubscribe --bind-to none "$trident" train "$tmp/auto/resolved_config.toml" \
    --set logging.run_dir="$tmp/again" > "$tmp/again.log" 2>&1 || fail "the resolved config: $(tail -5 "$tmp/again.log")"
  python3 - "$tmp/auto/metrics.jsonl" "$tmp/again/metrics.jsonl" <<'PY' || fail "the resolved config trains another run"
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert len(a) == 3 and [(r["loss"], r["grad_norm"]) for r in a] == [(r["loss"], r["grad_norm"]) for r in b], (a, b)
PY
  "${run[@]}" --auto --cluster "$cluster" --memory-per-rank 0.001 --set logging.run_dir="$tmp/none" \
    > "$tmp/none.log" 2>&1 && fail "train --auto with 1 MB per rank exited 0"
  # Below the calibrated process base no number of ranks helps: the message says how much.
  grep -q "nothing fits on 2 ranks; give each rank [0-9.]* MB of memory" "$tmp/none.log" ||
    fail "no suggestion when nothing fits: $(grep -m2 error "$tmp/none.log")"
  [ ! -e "$tmp/none" ] || fail "a job that does not fit made its run directory"
  echo "train --auto: $(grep -m1 '^auto: chose' "$tmp/auto.log"); the resolved config trains the same losses"
}

two_nodes() {
  source "$root/tests/scripts/netns_common.sh"
  require_netns "$name-probe"
  "$root/scripts/cluster.sh" up --name "$name" --nodes 2 --slots 2 --link-rate 1gbit >/dev/null ||
    fail "cluster.sh up failed"
  "$root/scripts/cluster.sh" run --name "$name" -np 4 "$trident" calibrate --threads 1 --rounds 1 --quick \
    --disk-dir none --out "$tmp/two.toml" > "$tmp/two.log" 2>&1 || fail "calibrate on 2 nodes failed: $(cat "$tmp/two.log")"
  check_file "$tmp/two.toml"
  [ "$(key devices_per_node "$tmp/two.toml")" = 2 ] || fail "two nodes: devices_per_node is not 2"
  [ "$(key machine_cores "$tmp/two.toml")" = "$(getconf _NPROCESSORS_ONLN)" ] ||
    fail "two nodes: machine_cores is not $(getconf _NPROCESSORS_ONLN)"
  grep -q '^\[inter_sendrecv_us\]' "$tmp/two.toml" || fail "two nodes: no inter-node table"
  grep -q '^\[inter_send_us\]' "$tmp/two.toml" || fail "two nodes: no one-way inter-node table"
  grep -q '^\[inter_ring_us\]' "$tmp/two.toml" || fail "two nodes: no ring step between nodes"
  # On the shaped link a message each way at once waits for acknowledgements queued behind
  # the other direction's data: exchanges take longer than messages one way. Compared size
  # by size from 256 KiB to 4 MiB, the median ratio: 1.36-1.52 in nine runs alone here and
  # 1.30 in a full suite, where a single size's ranged 0.96-1.64 in four of them. The sum
  # over the sizes this check first compared is dominated by the 4 MiB exchange, timed
  # briefly with --quick and the most unsteady: 1.06-1.51 in five runs, under 1.2 in one
  # (and once in a full suite).
  table() {  # TABLE: "bytes microseconds" a line, 256 KiB and up
    sed -n "/^\[$1\]/,/^\[/p" "$tmp/two.toml" |
      awk -F' = ' '/^"[0-9]+" = / { gsub(/"/, "", $1); if ($1 + 0 >= 262144) print $1, $2 }'
  }
  ratios() {  # OVER UNDER: TABLE OVER's time / TABLE UNDER's, size by size, sorted
    awk 'NR == FNR { under[$1] = $2; next } ($1 in under) && under[$1] > 0 { print $2 / under[$1] }' \
      <(table "$2") <(table "$1") | sort -g
  }
  # OVER UNDER WHAT CONDITION: the median of ratios OVER UNDER, over 4 sizes at least, must
  # meet the awk CONDITION on m, else WHAT fails the test.
  compare() {
    local r m
    r=$(ratios "$1" "$2")
    m=$(echo "$r" | awk '{ r[NR] = $1 } END { print NR ? (NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2) : 0 }')
    [ "$(echo "$r" | grep -c .)" -ge 4 ] || fail "two nodes: fewer than 4 sizes from 256 KiB in [$1] and [$2]"
    awk -v m="$m" "BEGIN { exit !($4) }" ||
      fail "two nodes: $3: median ratio $m over 256 KiB to 4 MiB ($(echo $r))"
    echo "two nodes: [$1] / [$2] over 256 KiB to 4 MiB: median $m of $(echo $r)"
  }
  # That ratio is a wall-clock figure of the emulated link under the suite's load (1.13 in
  # one full suite here): it is reported, not asserted; each size must be timed both ways.
  compare inter_sendrecv_us inter_send_us "exchanges or messages one way were not timed" "m > 0"
  # A ring through the nodes puts one stream each way on a node's link where the exchanges
  # put both ranks': on the shaped link its steps take less than the exchanges (median
  # ratio 0.42-0.61 in five runs here, single sizes 0.32-0.83).
  compare inter_ring_us inter_sendrecv_us "ring steps are not below exchanges" "m > 0 && m < 0.85"
  grep -q '^"4" = ' "$tmp/two.toml" || fail "two nodes: no contention at 4 ranks"
  # On the shaped link 64 MiB all-reduced over 4 ranks took 12 times the block: calibrate
  # sizes the reductions beside the block down, each still longer than the block (the
  # backward is then what the hidden share is of), 1.6-3.1 times it in five runs.
  for k in all-reduce reduce-scatter; do
    sized=$(sed -n "s/^# $k of \([0-9]*\) MiB over 4 ranks beside block .*: block \([0-9.]*\) ms, reduction \([0-9.]*\) ms, .*/\1 \2 \3/p" "$tmp/two.log")
    [ -n "$sized" ] || fail "two nodes: no $k beside the block in $tmp/two.log"
    read -r mib block reduction <<<"$sized"
    awk -v r="$reduction" -v b="$block" 'BEGIN { exit !(r > b) }' ||
      fail "two nodes: the $k beside the block ($mib MiB, $reduction ms) is not longer than the block ($block ms)"
    [ "$k" = reduce-scatter ] || [ "$mib" -lt 64 ] ||
      fail "two nodes: the all-reduce beside the block was not sized down from 64 MiB"
    echo "two nodes: $k of $mib MiB beside the block: $reduction ms against the block's $block ms"
  done
  inter=$(key inter_node_gbps "$tmp/two.toml") intra=$(key intra_node_gbps "$tmp/two.toml")
  # A 1 Gbit/s link (0.125 GB/s, shared by the node's 2 ranks) against shared memory.
  awk -v a="$inter" -v b="$intra" 'BEGIN { exit !(a > 0.02 && a < 0.125 && b > 5 * a) }' ||
    fail "inter-node bandwidth $inter GB/s is not that of the 1 Gbit/s link (intra $intra)"
  echo "two nodes: ok (inter-node $inter GB/s per rank, within a node $intra GB/s)"
}

if [ "$half" = one ]; then one_node; else two_nodes; fi
echo PASS
