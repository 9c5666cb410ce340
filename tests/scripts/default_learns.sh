#!/usr/bin/env bash
# configs/default.toml learns: over its last 10 steps the mean loss is within 15% of the
# loss floor the run prints (the source's entropy rate). Every layout trains the same model
# (the layout invariant, checked by the parity tests), so one process runs the whole
# schedule of the default config here, in a fraction of the 8-rank run's time. The spike
# guard, on by default, must skip none of its steps.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(mpirun -np 1 --oversubscribe --bind-to none "$trident" train "$root/configs/default.toml" \
  --set parallel.dp=1 --set parallel.pp=1 --set parallel.tp=1 --set train.log_every=1 \
  --set logging.run_dir="$tmp/run" 2>&1) || fail "train exited non-zero: $out"
floor=$(echo "$out" | sed -n 's/^loss floor (the source.s entropy rate): \([0-9.]*\) nats$/\1/p')
[ -n "$floor" ] || fail "the run printed no loss floor: $out"
python3 - "$tmp/run/metrics.jsonl" "$floor" <<'PY' || fail "the default config does not learn"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
floor = float(sys.argv[2])
last = [r["loss"] for r in rows[-10:]]
assert len(last) == 10, rows
# The loss-spike guard (on by default) never fires on the healthy default run.
assert not any(r["skipped"] for r in rows), [r["step"] for r in rows if r["skipped"]]
mean = sum(last) / len(last)
print(f"default config: mean loss of steps {rows[-10]['step']}-{rows[-1]['step']} {mean:.4f}, "
      f"floor {floor:.4f}, {100 * (mean / floor - 1):.1f}% above")
assert mean <= 1.15 * floor, f"{mean:.4f} is more than 15% above the floor {floor:.4f}"
PY
echo "default_learns: ok"
