# Sourced by the tests that run on emulated nodes (scripts/cluster.sh): they need network
# namespaces, which only root with CAP_NET_ADMIN can make. Where none can be made such a
# test cannot run: outside CI it exits 77, which its ctest entry (SKIP_RETURN_CODE 77)
# reports as skipped, never as passed; under CI (CI set, and not "false" or "0") it fails,
# because CI's machine is meant to run every test and a skip there would hide that it did not.

require_netns() {  # require_netns PROBE: returns where a namespace can be made, else exits
  if ip netns add "$1" 2>/dev/null; then
    ip netns del "$1"
    return 0
  fi
  local why="cannot create network namespaces here (needs root with CAP_NET_ADMIN)"
  case "${CI:-}" in
    "" | false | 0)
      echo "SKIPPED: $why"
      exit 77
      ;;
  esac
  echo "FAIL: $why, and under CI (CI=$CI) a test that cannot run fails: run CI as root on a"
  echo "machine that allows network namespaces"
  exit 1
}
