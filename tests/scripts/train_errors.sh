#!/usr/bin/env bash
# Bad input to `trident train` stops every rank before training with one message and a
# non-zero exit code: a missing data file, a layout that does not fit the ranks, a
# device this build or node does not have, sequence parallelism without tp, and bad data
# mixtures, files and evaluation sources.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
run() { mpirun -np "$1" --oversubscribe --bind-to none "$trident" train "${@:2}" --set logging.run_dir=none; }

err=$(run 2 "$root/configs/tiny.toml" --set parallel.dp=2 --set data.source=/nonexistent/tokens.bin 2>&1)
code=$?
[ $code -ne 0 ] || fail "a missing data file exited 0"
n=$(echo "$err" | grep -c "/nonexistent/tokens.bin")
[ "$n" -eq 1 ] || fail "expected one message naming the file, got $n:
$err"
echo "$err" | grep -q "^trident: error:" || fail "no 'trident: error:' line: $err"
echo "$err" | grep -q "^step " && fail "training started: $err"

err=$(run 2 "$root/configs/tiny.toml" 2>&1)
[ $? -ne 0 ] || fail "tiny.toml (dp=pp=tp=1) on 2 ranks exited 0"
echo "$err" | grep -q "parallel" || fail "layout error does not name the keys: $err"
[ "$(echo "$err" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message: $err"
# train.device = "cuda" where this build or node cannot: one message on every rank's behalf,
# exit code 2, naming the key and the way out; nothing trains.
err=$(run 2 "$root/configs/tiny.toml" --set parallel.dp=2 --set train.device=cuda 2>&1)
code=$?
[ $code -eq 2 ] || fail "train.device=cuda exited $code, not 2: $err"
[ "$(echo "$err" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message: $err"
echo "$err" | grep -q 'train.device = "cuda"' || fail "the message does not name train.device: $err"
echo "$err" | grep -q 'train.device = "cpu"' || fail "the message does not give the fix: $err"
echo "$err" | grep -q "^step " && fail "training started: $err"
# Sequence parallelism splits the sequence over tp: with tp = 1 it is refused, naming the fix.
err=$(run 2 "$root/configs/tiny.toml" --set parallel.dp=2 --set parallel.sequence_parallel=true 2>&1)
code=$?
[ $code -eq 2 ] || fail "sequence_parallel with tp = 1 exited $code, not 2: $err"
[ "$(echo "$err" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message: $err"
echo "$err" | grep -q "parallel.sequence_parallel = true needs parallel.tp > 1" ||
  fail "the message does not name sequence_parallel and tp: $err"
echo "$err" | grep -q "^step " && fail "training started: $err"

# Data mixtures, held-out windows and evaluation: each bad input stops both ranks before
# training with one message naming the key and the file.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
def raw(name, tokens): open(f"{d}/{name}", "wb").write(struct.pack(f"<{len(tokens)}H", *tokens))
raw("a.bin", [p % 200 for p in range(4000)])
raw("big.bin", [300 if p == 77 else p % 200 for p in range(4000)])
raw("short.bin", list(range(20)))
PY
sed '/^source = /d' "$root/configs/tiny.toml" > "$tmp/mix.toml"
expect_stop() {  # expect_stop TEXT CONFIG ARGS...: two ranks stop with one message holding TEXT
  local text=$1 out
  out=$(run 2 "${@:2}" --set parallel.dp=2 2>&1) && fail "exited 0: ${*:2}"
  [ "$(echo "$out" | grep -c '^trident: error:')" -eq 1 ] || fail "not exactly one message: $out"
  echo "$out" | grep -qF -- "$text" || fail "no '$text' in: $out"
  echo "$out" | grep -q "^step " && fail "training started: $out"
}
mix() { echo "data.mix=[{path = \"$tmp/a.bin\", weight = $1}, {path = \"$2\", weight = $3}]"; }
expect_stop "data.mix[1].weight = -1.0 is not valid; it must be >= 0" "$tmp/mix.toml" --set "$(mix 1 "$tmp/big.bin" -1)"
expect_stop "the weights of data.mix sum to 0" "$tmp/mix.toml" --set "$(mix 0 "$tmp/big.bin" 0)"
expect_stop "data.mix[1] (\"nope\"): data file $tmp/nope.bin not found" "$tmp/mix.toml" --set "$(mix 1 "$tmp/nope.bin" 1)"
expect_stop "data.mix[1] (\"big\"): data file $tmp/big.bin: token 300 at position 77" "$tmp/mix.toml" --set "$(mix 1 "$tmp/big.bin" 1)"
expect_stop "data.source (\"short\"): data file $tmp/short.bin has 20 tokens, needs at least seq_len+1 = 33" "$root/configs/tiny.toml" --set "data.source=$tmp/short.bin"
expect_stop "eval.source = \"$tmp/a.bin\" is data.source" "$root/configs/tiny.toml" --set "data.source=$tmp/a.bin" --set "eval.source=$tmp/a.bin" --set eval.sequences=4
expect_stop "data.valid_fraction = 1.5 is not valid; it must be in [0, 1)" "$root/configs/tiny.toml" --set "data.source=$tmp/a.bin" --set data.valid_fraction=1.5

echo "train_errors: ok"
