#!/usr/bin/env bash
# `trident batch` names, for each sequence of a step, the source, epoch, window and file
# offset that training reads: its JSON tokens are the file's tokens at that offset, a
# mixture's shares are exact, the epochs cover every window once, and configs that differ
# only in their layout print the same batch.
set -u
trident=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
def raw(name, tokens): open(f"{d}/{name}", "wb").write(struct.pack(f"<{len(tokens)}H", *tokens))
raw("web.bin", [(7 * p) % 251 for p in range(24 * 32 + 1)])       # 24 windows of 32
raw("code.bin", [(3 * p + 5) % 241 for p in range(8 * 32 + 1)])   # 8 windows of 32
PY
sed '/^source = /d' "$root/configs/tiny.toml" > "$tmp/mix.toml"
cat >> "$tmp/mix.toml" <<EOF2

[[data.mix]]
path = "$tmp/web.bin"
weight = 0.75

[[data.mix]]
path = "$tmp/code.bin"
weight = 0.25
name = "code"
EOF2
# tiny.toml: global batch 32 of seq_len 32; 24 of each batch from web, 8 from code.
"$trident" batch "$tmp/mix.toml" --step 3 --json > "$tmp/one.json" || fail "batch --json failed"
"$trident" batch "$tmp/mix.toml" --step 3 --json --set parallel.dp=2 --set parallel.pp=2 \
  --set parallel.tp=2 --set train.micro_batch_size=2 --set parallel.zero_stage=2 \
  > "$tmp/layout.json" || fail "batch with another layout failed"
cmp -s "$tmp/one.json" "$tmp/layout.json" || fail "the layout changed the batch"
for step in 1 2 3 4; do
  "$trident" batch "$tmp/mix.toml" --step $step --json > "$tmp/step$step.json" || fail "step $step"
done
python3 - "$tmp" <<'PY' || fail "the batch does not match the files"
import json, struct, sys
d = sys.argv[1]
def tokens(name):
    data = open(f"{d}/{name}.bin", "rb").read()
    return struct.unpack(f"<{len(data) // 2}H", data)
files = {name: tokens(name) for name in ("web", "code")}
windows = {"web": [], "code": []}
for step in (1, 2, 3, 4):
    out = json.load(open(f"{d}/step{step}.json"))
    assert out["step"] == step and out["batch"] == step, out
    seqs = out["sequences"]
    assert [s["index"] for s in seqs] == list(range(32)), seqs
    count = {"web": 0, "code": 0}
    for s in seqs:
        f = files[s["source"]]
        assert s["offset"] == 32 * s["window"], s
        assert s["tokens"] == list(f[s["offset"]:s["offset"] + 33]), s
        count[s["source"]] += 1
        windows[s["source"]].append((s["epoch"], s["window"]))
    assert count == {"web": 24, "code": 8}, count
# web: 96 sequences = 4 epochs of its 24 windows; code: 32 = 4 epochs of 8; each window
# once per epoch.
for name, w in (("web", 24), ("code", 8)):
    for e in range(4):
        got = sorted(win for ep, win in windows[name] if ep == e)
        assert got == list(range(w)), (name, e, got)
print("batch: 4 steps of 32 match the files; each window once per epoch")
PY
text=$("$trident" batch "$tmp/mix.toml" --step 2 --sequence 5 --tokens 4 --tokenizer byte) ||
  fail "batch --sequence failed"
[ "$(echo "$text" | grep -c '^sequence ')" -eq 1 ] || fail "--sequence printed not one: $text"
# n = 32 + 5 = 37 is slot 1 of the 3:1 period (web, web, code, web): web's j = 9 * 3 + 1 = 28,
# epoch 28 / 24 of its 24 windows.
echo "$text" | grep -q '^sequence 5: source web, epoch 1 (1\.1667), window [0-9]*, offset [0-9]*$' ||
  fail "no sequence line: $text"
echo "$text" | grep -q '^  tokens: [0-9]* [0-9]* [0-9]* [0-9]*$' || fail "no four tokens: $text"
echo "$text" | grep -q '^  text: "' || fail "no decoded text: $text"
err=$("$trident" batch "$tmp/mix.toml" --step 0 2>&1) && fail "--step 0 exited 0"
echo "$err" | grep -q -- "--step expects a training step from 1" || fail "no --step message: $err"
echo "batch_cli: ok"
