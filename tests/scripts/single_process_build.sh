#!/usr/bin/env bash
# The build for one process without MPI (scripts/build.sh --single-process: what a GPU node
# with only PyTorch builds, through the torch-package path of the CMake files) trains the
# same numbers as the MPI build on one rank, bit for bit: loss and gradient norm of every
# step and every tensor of the final checkpoint. A layout of several ranks and
# train.device = "cuda" (this libtorch is CPU-only) stop it with one clear message.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
JOBS=$(getconf _NPROCESSORS_ONLN) "$root/scripts/build.sh" --single-process >"$tmp/build.log" 2>&1 ||
  fail "the single-process build failed: $(tail -30 "$tmp/build.log")"
solo=$root/build/single-process/trident
echo "single-process build: $(($(date +%s) - start)) s"
grep -q "TRIDENT_HAVE_MPI=0" "$root/build/single-process/compile_commands.json" ||
  fail "the single-process build was compiled with MPI"
if ldd "$solo" | grep -q libmpi; then fail "the single-process trident links libmpi"; fi

# 5 steps of tiny in fp64 with ZeRO-1 and a final checkpoint, NAME's files in $tmp.
run() {  # run NAME COMMAND...
  local name=$1
  shift
  "$@" train "$root/configs/tiny.toml" --set train.steps=5 --set train.log_every=1 \
    --set train.precision=fp64 --set parallel.zero_stage=1 --set train.threads=1 \
    --set logging.run_dir=none --set logging.metrics="$tmp/$name.jsonl" \
    --set checkpoint.dir="$tmp/$name-ckpt" --set checkpoint.save_every=5 >"$tmp/$name.out" 2>&1 ||
    fail "$name: trident failed: $(cat "$tmp/$name.out")"
}
run solo "$solo"
run mpi mpirun -np 1 --bind-to none "$trident"

/usr/bin/python3 - "$tmp" "$root/tests/scripts" <<'PY' || fail "the two builds differ"
import glob, json, os, sys
sys.path.insert(0, sys.argv[2])
from safetensors_read import read_safetensors as tensors
tmp = sys.argv[1]
rows = {b: [json.loads(l) for l in open(f"{tmp}/{b}.jsonl")] for b in ("solo", "mpi")}
assert [r["step"] for r in rows["solo"]] == [1, 2, 3, 4, 5], rows["solo"]
for a, b in zip(rows["solo"], rows["mpi"]):
    for k in ("loss", "grad_norm"):
        assert a[k] == b[k], (k, a["step"], a[k], b[k])

files = {b: sorted(glob.glob(f"{tmp}/{b}-ckpt/step_5/*.safetensors")) for b in ("solo", "mpi")}
assert files["solo"], os.listdir(f"{tmp}/solo-ckpt")
assert [os.path.basename(p) for p in files["solo"]] == [os.path.basename(p) for p in files["mpi"]]
count = 0
for a, b in zip(files["solo"], files["mpi"]):
    ta, tb = tensors(a), tensors(b)
    assert ta.keys() == tb.keys(), (a, sorted(ta.keys() ^ tb.keys()))
    for k in ta:
        assert ta[k] == tb[k], (os.path.basename(a), k)
        count += 1
print(f"5 steps: losses and gradient norms equal; {count} checkpoint tensors equal byte for byte")
PY

# Bad input: several ranks, and a GPU this build cannot drive.
out=$("$solo" train "$root/configs/tiny.toml" --set parallel.dp=2 --set logging.run_dir=none 2>&1)
code=$?
[ $code -eq 2 ] || fail "dp = 2 on the single-process build exited $code: $out"
echo "$out" | grep -q "built without MPI" || fail "dp = 2: the message does not say why: $out"
out=$("$solo" train "$root/configs/tiny.toml" --set train.device=cuda --set logging.run_dir=none 2>&1)
code=$?
[ $code -eq 2 ] || fail "train.device = cuda exited $code: $out"
echo "$out" | grep -q 'train.device = "cuda" needs a GPU build' || fail "cuda: unclear message: $out"
[ "$(echo "$out" | grep -c error)" -eq 1 ] || fail "cuda: not one message: $out"
echo "single_process_build: ok"
