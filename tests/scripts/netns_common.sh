# Sourced by the tests that run on emulated nodes (scripts/cluster.sh): they need network
# namespaces, which only root with CAP_NET_ADMIN can make. Where none can be made such a
# test cannot run: skipped outside CI, failed under it (ci_common.sh).
source "$(dirname "${BASH_SOURCE[0]}")/ci_common.sh"

require_netns() {  # require_netns PROBE: returns where a namespace can be made, else exits
  if ip netns add "$1" 2>/dev/null; then
    ip netns del "$1"
    return 0
  fi
  cannot_run "cannot create network namespaces here (needs root with CAP_NET_ADMIN)"
}
