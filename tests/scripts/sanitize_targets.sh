#!/usr/bin/env bash
# scripts/sanitize.sh builds the programs of the list that tests/CMakeLists.txt writes
# (test_executables.txt in the build tree) and runs ctest there: every program that a
# ctest entry of this build runs must be on that list (or be trident), so that no test
# runs an unsanitized program under scripts/sanitize.sh, and the script must build from it.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
build=$(cd "$(dirname "$trident")" && pwd)
[ -s "$build/test_executables.txt" ] || fail "no $build/test_executables.txt"
grep -q 'test_executables.txt' "$root/scripts/sanitize.sh" ||
  fail "scripts/sanitize.sh does not build from test_executables.txt"
tmp=$(mktemp)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/scripts/ctest_listing.sh
source "$root/tests/scripts/ctest_listing.sh"
ctest_listing "$build" >"$tmp" || fail "ctest --show-only failed in $build"
/usr/bin/python3 - "$build" "$build/test_executables.txt" "$tmp" <<'PY'
import json, os, sys
build, listed, tests = sys.argv[1:4]
listed = {l.strip() for l in open(listed) if l.strip()} | {"trident"}
ran = set()
for t in json.load(open(tests))["tests"]:
    for arg in t.get("command", []):  # entries of programs not built have none
        # A program of this build tree that the entry runs (directly, under mpirun, or as
        # a script's argument).
        if arg.startswith(build + "/") and os.path.isfile(arg) and os.access(arg, os.X_OK):
            ran.add(os.path.basename(arg))
missing = sorted(ran - listed)
print(f"programs the tests run: {sorted(ran)}")
if missing:
    sys.exit(f"FAIL: not on the list scripts/sanitize.sh builds: {missing}")
if "test_cli" not in ran:
    sys.exit("FAIL: no entry runs test_cli")
PY
