# The network plumbing of emulated nodes, sourced by scripts/cluster.sh (Open MPI's own
# launch) and scripts/slurm.sh (a Slurm cluster): one network namespace per node, named
# NAME-nodeI, each with a veth link (NAMEvI outside, eth0 inside) to the bridge NAMEbr, the
# address 10.77.0.(I+1)/24 existing only inside the namespaces, and the link optionally
# shaped with tc's token bucket (RATE in tc's notation, BURST the bucket's depth).
# Needs root (CAP_NET_ADMIN). NAME prefixes everything, so that two clusters can coexist.

emulated_node_ns() { echo "$1-node$2"; }  # NAME I

emulated_nodes_up() {  # NAME NODES [RATE [BURST]]
  local name=$1 nodes=$2 rate=${3:-} burst=${4:-16kb} i ns
  ip link add "${name}br" type bridge
  ip link set "${name}br" up
  for ((i = 0; i < nodes; i++)); do
    ns=$(emulated_node_ns "$name" "$i")
    ip netns add "$ns"
    ip link add "${name}v$i" type veth peer name eth0 netns "$ns"
    ip link set "${name}v$i" master "${name}br" up
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ -n "$rate" ]; then
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms
    fi
  done
}

emulated_nodes_down() {  # NAME: removes every namespace, link and the bridge; idempotent
  local name=$1 ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$name-node" || true); do
    ip netns del "$ns" 2>/dev/null || true  # takes its end of the veth, and so the pair
  done
  ip link del "${name}br" 2>/dev/null || true
}
