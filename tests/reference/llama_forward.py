#!/usr/bin/env python3
"""An independent Llama reference in numpy, written from Hugging Face's LlamaForCausalLM
and MixtralForCausalLM math and sharing no code with trident: it writes random small Llama
(or, with --experts, Mixtral) directories (config.json + safetensors, single or sharded,
F64/F32/BF16) and computes the mean next-token loss of such a directory on a raw uint16
token file, in float64.

  llama_forward.py make DIR --dtype F64 --kv-heads 2 [--tied] [--sharded] [--seed N]
                            [--experts E --top-k K]
  llama_forward.py loss DIR TOKENS --sequences K --seq-len T [--rope interleaved]
  llama_forward.py greedy DIR --prompt-tokens 1,2,3 --tokens N

`greedy` prints the N tokens a greedy decode appends to the prompt (the highest logit, the
lowest id on a tie), recomputing the whole sequence for each, as a JSON list.

`--rope interleaved` rotates Meta's adjacent pairs instead of Hugging Face's halves: the
tests use it to show that the comparison tells the two orders apart.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import safetensors_read  # noqa: E402  tests/scripts/safetensors_read.py: the tests' one reader

SHAPE = dict(layers=2, hidden=32, heads=4, ffn=40, vocab=61, positions=64)


def bf16_bits(x):
    # Round to nearest even, as torch's float -> bfloat16 does.
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {}, [], 0
    for name, array in tensors:
        if dtype == "BF16":
            raw = bf16_bits(array).tobytes()
        else:
            raw = np.ascontiguousarray(array, dtype={"F64": "<f8", "F32": "<f4"}[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    out = {}
    for name, (dtype, shape, raw) in safetensors_read.read_safetensors(path).items():
        if dtype == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, {"F64": "<f8", "F32": "<f4"}[dtype])
        out[name] = a.astype(np.float64).reshape(shape)
    return out


def make(args):
    s, rng = SHAPE, np.random.default_rng(args.seed)
    c, hd = s["hidden"], s["hidden"] // s["heads"]
    kv = args.kv_heads
    mat = lambda o, i: rng.normal(0, 0.2, (o, i))
    norm = lambda: 1 + rng.normal(0, 0.1, (c,))
    tensors = [("model.embed_tokens.weight", rng.normal(0, 0.5, (s["vocab"], c)))]
    for i in range(s["layers"]):
        p = "model.layers.%d." % i
        tensors += [
            (p + "input_layernorm.weight", norm()),
            (p + "self_attn.q_proj.weight", mat(s["heads"] * hd, c)),
            (p + "self_attn.k_proj.weight", mat(kv * hd, c)),
            (p + "self_attn.v_proj.weight", mat(kv * hd, c)),
            (p + "self_attn.o_proj.weight", mat(c, s["heads"] * hd)),
            (p + "post_attention_layernorm.weight", norm()),
        ]
        if args.experts:  # Mixtral: a router and E experts (w1 gate, w2 down, w3 up)
            tensors.append((p + "block_sparse_moe.gate.weight", mat(args.experts, c)))
            for e in range(args.experts):
                x = p + "block_sparse_moe.experts.%d." % e
                tensors += [(x + "w1.weight", mat(s["ffn"], c)), (x + "w2.weight", mat(c, s["ffn"])),
                            (x + "w3.weight", mat(s["ffn"], c))]
        else:
            tensors += [
                (p + "mlp.gate_proj.weight", mat(s["ffn"], c)),
                (p + "mlp.up_proj.weight", mat(s["ffn"], c)),
                (p + "mlp.down_proj.weight", mat(c, s["ffn"])),
            ]
    tensors.append(("model.norm.weight", norm()))
    if not args.tied:
        tensors.append(("lm_head.weight", rng.normal(0, 0.5, (s["vocab"], c))))
    os.makedirs(args.dir, exist_ok=True)
    if args.sharded:
        half = len(tensors) // 2
        parts = {"model-00001-of-00002.safetensors": tensors[:half],
                 "model-00002-of-00002.safetensors": tensors[half:]}
        for name, part in parts.items():
            write_safetensors(os.path.join(args.dir, name), part, args.dtype)
        weight_map = {t: name for name, part in parts.items() for t, _ in part}
        with open(os.path.join(args.dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f)
    else:
        write_safetensors(os.path.join(args.dir, "model.safetensors"), tensors, args.dtype)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": c, "intermediate_size": s["ffn"], "num_hidden_layers": s["layers"],
        "num_attention_heads": s["heads"], "num_key_value_heads": kv,
        "vocab_size": s["vocab"], "max_position_embeddings": s["positions"],
        "rms_norm_eps": 1e-5, "rope_theta": 500.0, "tie_word_embeddings": bool(args.tied),
        "torch_dtype": {"F64": "float64", "F32": "float32", "BF16": "bfloat16"}[args.dtype],
    }
    if args.experts:
        config.update({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
                       "num_local_experts": args.experts, "num_experts_per_tok": args.top_k,
                       "router_jitter_noise": 0.0, "sliding_window": None})
    with open(os.path.join(args.dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def load_weights(d):
    if os.path.exists(os.path.join(d, "model.safetensors")):
        return read_safetensors(os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        files = set(json.load(f)["weight_map"].values())
    w = {}
    for name in sorted(files):
        w.update(read_safetensors(os.path.join(d, name)))
    return w


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, theta, order):
    # x (heads, T, d)
    T, d = x.shape[1], x.shape[2]
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    freqs = np.outer(np.arange(T, dtype=np.float64), inv_freq)  # (T, d/2)
    if order == "hf":
        emb = np.concatenate([freqs, freqs], axis=-1)
        rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
        return x * np.cos(emb) + rotated * np.sin(emb)
    emb = np.repeat(freqs, 2, axis=-1)  # Meta: pairs (2i, 2i+1) rotate together
    rotated = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    return x * np.cos(emb) + rotated * np.sin(emb)


def sparse_moe(cfg, w, p, h):
    # MixtralSparseMoeBlock: softmax over the router's logits, the top k, their weights
    # renormalised to sum to 1; each expert w2(silu(w1 h) * w3 h) on its tokens, weighted.
    logits = h @ w[p + "gate.weight"].T  # (T, E)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    k = cfg["num_experts_per_tok"]
    chosen = np.argsort(-probs, axis=-1, kind="stable")[:, :k]  # (T, k)
    weights = np.take_along_axis(probs, chosen, -1)
    weights /= weights.sum(-1, keepdims=True)
    out = np.zeros_like(h)
    for e in range(cfg["num_local_experts"]):
        rows, slot = np.nonzero(chosen == e)
        x = h[rows]
        g = x @ w[p + "experts.%d.w1.weight" % e].T
        y = ((g / (1 + np.exp(-g))) * (x @ w[p + "experts.%d.w3.weight" % e].T)) @ \
            w[p + "experts.%d.w2.weight" % e].T
        np.add.at(out, rows, y * weights[rows, slot][:, None])
    return out


def forward_logits(cfg, w, ids, order="hf"):
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    c = cfg["hidden_size"]
    hd, eps, theta = c // heads, cfg["rms_norm_eps"], cfg["rope_theta"]
    T = len(ids)
    x = w["model.embed_tokens.weight"][ids]  # (T, C)
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, heads, hd).transpose(1, 0, 2)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, kv, hd).transpose(1, 0, 2)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, kv, hd).transpose(1, 0, 2)
        q, k = rope(q, theta, order), rope(k, theta, order)
        # query head j reads kv head j // (heads / kv): HF's repeat_kv
        k = np.repeat(k, heads // kv, axis=0)
        v = np.repeat(v, heads // kv, axis=0)
        att = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        att = np.where(mask, -np.inf, att)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(T, heads * hd)
        x = x + y @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if "num_local_experts" in cfg:
            x = x + sparse_moe(cfg, w, p + "block_sparse_moe.", h)
            continue
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + ((gate / (1 + np.exp(-gate))) * (h @ w[p + "mlp.up_proj.weight"].T)) @ \
            w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ head.T  # (T, V)


def forward_losses(cfg, w, ids, targets, order):
    logits = forward_logits(cfg, w, ids, order)
    m = logits.max(-1, keepdims=True)
    logz = m[:, 0] + np.log(np.exp(logits - m).sum(-1))
    return logz - logits[np.arange(len(ids)), targets]


def greedy_decode(logits_of, prompt, tokens):
    """The tokens a greedy decode appends to `prompt`; logits_of(ids) -> (T, V)."""
    ids = list(prompt)
    for _ in range(tokens):
        ids.append(int(np.argmax(logits_of(np.array(ids, dtype=np.int64))[-1])))
    return ids[len(prompt):]


def greedy(args):
    with open(os.path.join(args.dir, "config.json")) as f:
        cfg = json.load(f)
    w = load_weights(args.dir)
    prompt = [int(t) for t in args.prompt_tokens.split(",")]
    print(json.dumps(greedy_decode(lambda ids: forward_logits(cfg, w, ids), prompt, args.tokens)))


def loss(args):
    with open(os.path.join(args.dir, "config.json")) as f:
        cfg = json.load(f)
    w = load_weights(args.dir)
    tokens = np.fromfile(args.tokens, dtype="<u2").astype(np.int64)
    K, T = args.sequences, args.seq_len
    total = 0.0
    for k in range(K):
        window = tokens[k * T:k * T + T + 1]
        total += forward_losses(cfg, w, window[:-1], window[1:], args.rope).sum()
    print(repr(total / (K * T)))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--dtype", choices=["F64", "F32", "BF16"], default="F64")
    m.add_argument("--kv-heads", type=int, default=2)
    m.add_argument("--tied", action="store_true")
    m.add_argument("--sharded", action="store_true")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--experts", type=int, default=0, help="Mixtral: experts per layer")
    m.add_argument("--top-k", type=int, default=2, help="Mixtral: experts per token")
    l = sub.add_parser("loss")
    l.add_argument("dir")
    l.add_argument("tokens")
    l.add_argument("--sequences", type=int, required=True)
    l.add_argument("--seq-len", type=int, required=True)
    l.add_argument("--rope", choices=["hf", "interleaved"], default="hf")
    g = sub.add_parser("greedy")
    g.add_argument("dir")
    g.add_argument("--prompt-tokens", required=True)
    g.add_argument("--tokens", type=int, required=True)
    args = ap.parse_args()
    {"make": make, "loss": loss, "greedy": greedy}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
