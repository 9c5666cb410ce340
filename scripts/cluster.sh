#!/usr/bin/env bash
# Emulated nodes on one machine, for running trident across "nodes" for real: one Linux
# network namespace per node, each with a veth link to a bridge (addresses 10.77.0.x/24
# exist only inside these namespaces), the links optionally shaped with tc's tbf, and an
# Open MPI launch agent that starts each node's daemon inside its namespace. Ranks on one
# node talk over shared memory, ranks on different nodes over TCP: Open MPI's real
# multi-node path. Needs root (CAP_NET_ADMIN).
#
#   scripts/cluster.sh up --nodes N [--slots S] [--link-rate RATE] [--link-burst SIZE]
#                         [--name NAME]
#   scripts/cluster.sh run [--name NAME] -np P [mpirun options] PROGRAM [ARGS...]
#   scripts/cluster.sh bytes [--name NAME]    # bytes (and packets) each node sent, received
#   scripts/cluster.sh down [--name NAME]     # removes everything `up` made; idempotent
#
# NAME (default "trident") prefixes every namespace, link and file, so that two clusters
# can coexist; RATE is tc's notation (2gbit, 500mbit). SIZE (default 16kb) is the token
# bucket's depth: a real link sends every byte at its rate, and a deep bucket would let a
# message up to SIZE through at memory speed after each pause (measured with a 256kb
# bucket at 1gbit: a 64 KiB exchange between computation took 0.2-2.3 ms against 1.1 ms
# back to back, with the pause deciding); at 16kb the two agree within 10% from 64 KiB up.
# `run` launches mpirun on node 0 with the cluster's hostfile (S slots per node, filled in
# order: ranks 0..S-1 on node 0), so with Megatron's rank order tp groups stay inside a
# node, then pp, then dp. Ranks may move between the machine's cores (--bind-to none)
# unless the mpirun options bind them (--bind-to core:overload-allowed: each node's ranks
# take the cores in turn).
set -euo pipefail

cmd=${1:-}
[ -n "$cmd" ] && shift
name=trident nodes=0 slots=4 rate="" burst=16kb
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --link-rate) rate=$2; shift 2 ;;
    --link-burst) burst=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    *) break ;;
  esac
done
state=/tmp/$name-cluster
source "$(dirname "$0")/emulated_nodes.sh"
node_ns() { emulated_node_ns "$name" "$1"; }

die() { echo "cluster.sh: $*" >&2; exit 2; }

down() {
  emulated_nodes_down "$name"
  rm -rf "$state"
}

up() {
  [ "$nodes" -ge 1 ] 2>/dev/null || die "up needs --nodes N (N >= 1)"
  [ ${#name} -le 10 ] || die "--name is at most 10 characters (link names are short)"
  [ ! -d "$state" ] || die "a cluster '$name' is up already (scripts/cluster.sh down --name $name)"
  trap 'down' ERR
  mkdir -p "$state"
  emulated_nodes_up "$name" "$nodes" "$rate" "$burst"
  : >"$state/hosts"
  for ((i = 0; i < nodes; i++)); do
    echo "node$i slots=$slots" >>"$state/hosts"
  done
  # The launch agent: Open MPI calls it as `agent HOST COMMAND...`, like ssh.
  cat >"$state/agent" <<AGENT
#!/bin/sh
host=\$1; shift
exec ip netns exec "$name-\$host" unshare --uts /bin/sh -c "hostname \$host; \$*"
AGENT
  chmod +x "$state/agent"
  echo "$nodes" >"$state/nodes"
  trap - ERR
  echo "cluster '$name': $nodes nodes x $slots slots, link ${rate:-unshaped}${rate:+ (bucket $burst)}, hostfile $state/hosts"
}

run() {
  [ -d "$state" ] || die "no cluster '$name' is up (scripts/cluster.sh up --nodes N)"
  local args="" a
  for a in "$@"; do args+=" $(printf '%q' "$a")"; done
  # The ranks get the caller's environment of the run (mpirun forwards what -x names).
  local map="--map-by slot"  # unless the caller maps ranks otherwise
  local bind="--bind-to none"  # unless the caller binds them
  for a in "$@"; do
    [ "$a" = "--map-by" ] && map=""
    [ "$a" = "--bind-to" ] && bind=""
  done
  local forward="-x PATH" v
  for v in LD_LIBRARY_PATH OMP_NUM_THREADS OMPI_MCA_mpi_yield_when_idle OMPI_ALLOW_RUN_AS_ROOT \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM; do
    [ -n "${!v:-}" ] && forward+=" -x $v"
  done
  ip netns exec "$(node_ns 0)" unshare --uts /bin/sh -c "hostname head; exec mpirun \
    --hostfile $state/hosts $map $bind --oversubscribe \
    --mca plm_rsh_agent $state/agent --mca oob_tcp_if_include eth0 \
    --mca btl self,vader,tcp --mca btl_tcp_if_include eth0 \
    $forward $args"
}

bytes() {
  [ -d "$state" ] || die "no cluster '$name' is up"
  local n i
  n=$(cat "$state/nodes")
  # NODE TX_BYTES RX_BYTES TX_PACKETS RX_PACKETS: each packet's bytes include its own
  # Ethernet, IP and TCP headers (66 bytes with TCP timestamps), pure ACKs only those.
  local stats=/sys/class/net/eth0/statistics f
  for ((i = 0; i < n; i++)); do
    echo "node$i$(for f in tx_bytes rx_bytes tx_packets rx_packets; do
      printf ' %s' "$(ip netns exec "$(node_ns $i)" cat "$stats/$f")"
    done)"
  done
}

case "$cmd" in
  up) up ;;
  run) run "$@" ;;
  bytes) bytes ;;
  down) down ;;
  *) die "usage: scripts/cluster.sh up|run|bytes|down [options] (see the header of this file)" ;;
esac
