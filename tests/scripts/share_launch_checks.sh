#!/usr/bin/env bash
# The listing's checks of shared launches (tests/mpi/mpi_cases.h, share_launch): each
# mistake fails `test_mpi --list-ctest` with its own message and prints no entry, and a
# valid launch replaces its cases' entries with one that runs their filters in turn.
#   share_launch_checks.sh TRIDENT ROOT TEST_MPI
set -uo pipefail
test_mpi=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

"$test_mpi" --list-ctest > "$tmp/list" 2> "$tmp/err" ||
  fail "the registry's own listing fails: $(cat "$tmp/err")"
# An entry's fields: name ranks filter timeout_s labels [pass_regex ...]. Cases the checks
# use: two alone of 2 ranks, one alone of 4, one meant to abort, one in a shared launch.
alone() { awk -v r="$1" 'NF == 5 && $1 == $5 && $2 == r { print $1 }' "$tmp/list"; }
mapfile -t two < <(alone 2 | head -2)
four=$(alone 4 | head -1)
aborting=$(awk 'NF >= 6 { print $1; exit }' "$tmp/list")
shared=$(awk 'NF == 5 && $5 ~ /,/ { split($5, a, ","); print a[1]; exit }' "$tmp/list")
[ "${#two[@]}" -eq 2 ] && [ -n "$four" ] && [ -n "$aborting" ] && [ -n "$shared" ] ||
  fail "the listing lacks the cases these checks use: $(cat "$tmp/list")"

refused() {  # MESSAGE ARGS...: the listing fails, says MESSAGE and prints no entry
  local want=$1
  shift
  if "$test_mpi" --list-ctest "$@" > "$tmp/out" 2> "$tmp/err"; then
    fail "accepted: $*"
  fi
  grep -qF -- "$want" "$tmp/err" || fail "for $*: expected '$want', got: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "for $*: entries printed though refused: $(cat "$tmp/out")"
  return 0
}
refused "shared launch x: no mpi case no_such_case" --share-launch x=no_such_case
refused "shared launch x: $four has 4 ranks against 2" --share-launch "x=${two[0]},$four"
refused "shared launch x: $aborting has 8 ranks against 8, and aborts" --share-launch "x=$aborting"
refused "mpi case $shared is in two shared launches" --share-launch "x=$shared"
refused "shared launch x: needs a name without spaces, ',' or ';', and at least one case" \
  --share-launch "x="
refused "shared launch a;b: needs a name without spaces" --share-launch "a;b=${two[0]}"
refused "shared launch ${two[1]} has the name of a case or another launch" \
  --share-launch "${two[1]}=${two[0]}"
refused "--share-launch takes NAME=CASE[,CASE...], got 'x'" --share-launch x

# A valid launch: one entry of 2 ranks, the two filters in turn, the timeouts summed, both
# names as labels, in place of the two cases' own entries.
"$test_mpi" --list-ctest --share-launch "pair=${two[0]},${two[1]}" > "$tmp/out" 2> "$tmp/err" ||
  fail "a valid launch is refused: $(cat "$tmp/err")"
field() { awk -v n="$1" -v k="$2" '$1 == n { print $k }' "$3"; }
want="pair 2 $(field "${two[0]}" 3 "$tmp/list"):$(field "${two[1]}" 3 "$tmp/list") \
$(($(field "${two[0]}" 4 "$tmp/list") + $(field "${two[1]}" 4 "$tmp/list"))) ${two[0]},${two[1]}"
got=$(awk '$1 == "pair"' "$tmp/out")
[ "$got" = "$want" ] || fail "the launch's entry: expected '$want', got '$got'"
[ -z "$(field "${two[0]}" 1 "$tmp/out")$(field "${two[1]}" 1 "$tmp/out")" ] ||
  fail "the launch's cases still have entries of their own"
[ "$(wc -l < "$tmp/out")" -eq $(($(wc -l < "$tmp/list") - 1)) ] ||
  fail "expected one entry fewer than the registry's own listing"
echo "shared launch checks: 8 mistakes refused with their messages, a valid launch merged"
