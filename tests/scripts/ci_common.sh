# Sourced by every test script that may find its machine unable to run it (no network
# namespaces, not root, no cgroup controller). One rule for the whole suite: CI is on when
# the variable CI is set to anything but "", "false" or "0" (.ci/run exports CI=true).
# Outside CI such a test exits 77, which its ctest entry (SKIP_RETURN_CODE 77) reports as
# skipped, never as passed; under CI it fails, because CI's machine must run every test.

under_ci() {
  case "${CI:-}" in
    "" | false | 0) return 1 ;;
  esac
  return 0
}

cannot_run() {  # cannot_run WHY: skip outside CI, fail under it
  if ! under_ci; then
    echo "SKIPPED: $1"
    exit 77
  fi
  echo "FAIL: $1, and under CI (CI=$CI) a test that cannot run fails: run CI as root on a"
  echo "machine that allows it"
  exit 1
}
