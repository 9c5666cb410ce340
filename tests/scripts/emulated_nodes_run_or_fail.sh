#!/usr/bin/env bash
# The tests on emulated nodes need network namespaces. Where none can be made, each must be
# reported as skipped (exit 77 with SKIP_RETURN_CODE 77 on its ctest entry), never as
# passed, and under CI (CI=true) it must fail. Checked on every ctest entry labelled
# emulated_nodes, run as ctest would run it but with an `ip` that cannot make namespaces
# (and an mpirun that fails, so that nothing else runs instead); and every test script that
# probes for namespaces must be behind such an entry and probe through require_netns
# (tests/scripts/netns_common.sh), so that a new one cannot slip around the rule.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/bin"
printf '#!/bin/sh\necho "ip: Operation not permitted" >&2\nexit 2\n' >"$tmp/bin/ip"
printf '#!/bin/sh\necho "mpirun: not here" >&2\nexit 3\n' >"$tmp/bin/mpirun"
chmod +x "$tmp/bin/ip" "$tmp/bin/mpirun"

# shellcheck source=tests/scripts/ctest_listing.sh
source "$root/tests/scripts/ctest_listing.sh"
ctest_listing "$(dirname "$trident")" >"$tmp/tests.json" ||
  fail "ctest --show-only failed in $(dirname "$trident")"
/usr/bin/python3 - "$tmp/tests.json" "$root/tests/scripts" >"$tmp/entries" <<'PY' || fail "$(cat "$tmp/entries")"
import glob, json, os, sys
tests, scripts = json.load(open(sys.argv[1]))["tests"], sys.argv[2]
problems, labelled = [], set()
for t in tests:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if "emulated_nodes" not in props.get("LABELS", []):
        continue
    labelled.add(os.path.basename(t["command"][1]))
    if props.get("SKIP_RETURN_CODE") != 77:
        problems.append(f"{t['name']}: no SKIP_RETURN_CODE 77, so a skip would count as a failure")
    print("\t".join([t["name"]] + t["command"]))  # one entry a line, its command tab-separated
for path in sorted(glob.glob(f"{scripts}/*.sh")):
    name, text = os.path.basename(path), open(path).read()
    if name in ("netns_common.sh", "emulated_nodes_run_or_fail.sh"):  # the rule itself
        continue
    if "ip netns add" in text:
        problems.append(f"{name} probes with `ip netns add` itself: use require_netns")
    if "require_netns" in text and name not in labelled:
        problems.append(f"{name} needs namespaces but no ctest entry running it is labelled emulated_nodes")
if not labelled:
    problems.append("no ctest entry is labelled emulated_nodes")
if problems:
    print("\n".join(problems))
    sys.exit(1)
PY

count=0
while IFS=$'\t' read -r -a entry; do
  name=${entry[0]}
  command=("${entry[@]:1}")
  PATH="$tmp/bin:$PATH" CI= "${command[@]}" >"$tmp/out" 2>&1
  code=$?
  [ $code -eq 77 ] || fail "$name without namespaces, outside CI: exit $code, not 77 (skipped): $(cat "$tmp/out")"
  PATH="$tmp/bin:$PATH" CI=true "${command[@]}" >"$tmp/out" 2>&1
  code=$?
  [ $code -ne 0 ] && [ $code -ne 77 ] ||
    fail "$name without namespaces, under CI=true: exit $code, not a failure: $(cat "$tmp/out")"
  grep -q "CI=true" "$tmp/out" || fail "$name under CI: the message does not say why: $(cat "$tmp/out")"
  echo "$name: skipped outside CI, failed under CI"
  count=$((count + 1))
done <"$tmp/entries"
[ $count -ge 3 ] || fail "only $count emulated-node entries (cluster parity, scaling, calibration)"
echo "emulated_nodes_run_or_fail: ok ($count entries)"
