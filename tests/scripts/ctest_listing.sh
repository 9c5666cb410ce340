# Sourced by tests that inspect the suite itself. ctest --show-only rewrites
# Testing/Temporary/LastTest.log where it runs, which would erase the log of the ctest run
# these tests are part of (scripts/slowest-tests.sh reads it): list the tests from a copy
# of the build tree's test files instead.
#   ctest_listing BUILD > FILE   ctest --show-only=json-v1 of BUILD's tests
ctest_listing() {
  local build=$1 shadow status
  shadow=$(mktemp -d) || return 1
  (cd "$build" && find . -name CTestTestfile.cmake -not -path './single-process/*' |
    while read -r f; do mkdir -p "$shadow/$(dirname "$f")" && cp "$f" "$shadow/$f"; done) &&
    (cd "$shadow" && ctest --show-only=json-v1)
  status=$?
  rm -rf "$shadow"
  return $status
}
