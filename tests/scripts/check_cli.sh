#!/usr/bin/env bash
# `trident check`: a valid config prints its layout; a misspelt key exits non-zero with the
# key, the file and line, and the suggestion.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }

out=$("$trident" check "$root/configs/default.toml" --world 8) || fail "check of default.toml exited $?"
echo "$out" | grep -q "^# layout: 8 ranks = dp 2 x pp 2 x tp 2" || fail "no layout line in: $out"
echo "$out" | grep -q "rank 5: dp 0 pp 1 tp 1" || fail "rank 5 is not dp 0 pp 1 tp 1"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[model]\nlayers = 4\nhiden = 64\n' > "$tmp/bad.toml"
err=$("$trident" check "$tmp/bad.toml" 2>&1 >/dev/null)
code=$?
[ "$code" -ne 0 ] || fail "a misspelt key exited 0"
echo "$err" | grep -q "bad.toml:3: unknown key 'model.hiden'; did you mean 'model.hidden'?" \
  || fail "unexpected message: $err"

err=$("$trident" check "$root/configs/default.toml" --world 6 2>&1 >/dev/null)
[ $? -ne 0 ] || fail "a layout that does not fit 6 ranks exited 0"
echo "$err" | grep -qi "parallel" || fail "layout error does not name the key: $err"
echo "check_cli: ok"
