# Shared by the Llama script tests: their arguments, numpy python, a scratch directory, a
# token file of 400 tokens below 61, and helpers to run trident and compare losses.
# Sourced, with "$@" = TRIDENT ROOT.
set -u
trident=$1 root=$2
py=/usr/bin/python3  # Debian's python3 with python3-numpy
ref="$root/tests/reference/llama_forward.py"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { local np=$1; shift; mpirun -np "$np" --oversubscribe --bind-to none "$trident" "$@"; }
loss_of() { $py -c "import json,sys; print(repr(json.loads(sys.stdin.read().strip().splitlines()[-1])['loss']))"; }
close() {  # $1 $2 within relative $3
  $py -c "import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= t*abs(b) else 1)" "$1" "$2" "$3"
}
$py -c "import numpy" 2>/dev/null || fail "python3-numpy is missing (scripts/setup.sh installs it)"
$py - "$tmp/tokens.bin" <<'PY'
import random, struct, sys
random.seed(5)
open(sys.argv[1], "wb").write(struct.pack("<400H", *[random.randrange(61) for _ in range(400)]))
PY
K=6 T=16
