#!/usr/bin/env python3
"""An independent GPT-2 reference in numpy, written from Hugging Face's GPT2LMHeadModel math
and sharing no code with trident: it writes random small GPT-2 directories (config.json +
model.safetensors in HF's Conv1D layout, float64) and decodes greedily from them.

  gpt2_forward.py make DIR [--seed N]
  gpt2_forward.py greedy DIR --prompt-tokens 1,2,3 --tokens N

`greedy` prints, as a JSON list, the N tokens a greedy decode appends to the prompt (the
highest logit, the lowest id on a tie), recomputing the whole sequence for each.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_forward import greedy_decode, load_weights, write_safetensors  # noqa: E402

SHAPE = dict(layers=2, hidden=32, heads=4, vocab=61, positions=32)


def make(args):
    s, rng = SHAPE, np.random.default_rng(args.seed)
    c = s["hidden"]
    normal = lambda std, *shape: rng.normal(0, std, shape)
    tensors = [("transformer.wte.weight", normal(0.5, s["vocab"], c)),
               ("transformer.wpe.weight", normal(1.0, s["positions"], c))]
    for i in range(s["layers"]):
        p = "transformer.h.%d." % i
        tensors += [
            (p + "ln_1.weight", 1 + normal(0.1, c)), (p + "ln_1.bias", normal(0.1, c)),
            # Conv1D: weights are (in, out), y = x @ W + b
            (p + "attn.c_attn.weight", normal(0.2, c, 3 * c)), (p + "attn.c_attn.bias", normal(0.1, 3 * c)),
            (p + "attn.c_proj.weight", normal(0.2, c, c)), (p + "attn.c_proj.bias", normal(0.1, c)),
            (p + "ln_2.weight", 1 + normal(0.1, c)), (p + "ln_2.bias", normal(0.1, c)),
            (p + "mlp.c_fc.weight", normal(0.2, c, 4 * c)), (p + "mlp.c_fc.bias", normal(0.1, 4 * c)),
            (p + "mlp.c_proj.weight", normal(0.2, 4 * c, c)), (p + "mlp.c_proj.bias", normal(0.1, c)),
        ]
    tensors += [("transformer.ln_f.weight", 1 + normal(0.1, c)), ("transformer.ln_f.bias", normal(0.1, c))]
    os.makedirs(args.dir, exist_ok=True)
    write_safetensors(os.path.join(args.dir, "model.safetensors"), tensors, "F64")
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": s["layers"],
              "n_embd": c, "n_head": s["heads"], "vocab_size": s["vocab"],
              "n_positions": s["positions"], "n_ctx": s["positions"],
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
              "torch_dtype": "float64"}
    with open(os.path.join(args.dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def forward_logits(cfg, w, ids):
    heads, c = cfg["n_head"], cfg["n_embd"]
    hd, T = c // heads, len(ids)
    g = lambda name: w["transformer." + name]
    x = g("wte.weight")[ids] + g("wpe.weight")[:T]  # (T, C)
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    for i in range(cfg["n_layer"]):
        p = "h.%d." % i
        a = layer_norm(x, g(p + "ln_1.weight"), g(p + "ln_1.bias"))
        qkv = a @ g(p + "attn.c_attn.weight") + g(p + "attn.c_attn.bias")  # (T, 3C)
        q, k, v = (qkv[:, j * c:(j + 1) * c].reshape(T, heads, hd).transpose(1, 0, 2) for j in range(3))
        att = np.where(mask, -np.inf, q @ k.transpose(0, 2, 1) / np.sqrt(hd))
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(T, c)
        x = x + y @ g(p + "attn.c_proj.weight") + g(p + "attn.c_proj.bias")
        m = layer_norm(x, g(p + "ln_2.weight"), g(p + "ln_2.bias"))
        h = gelu_new(m @ g(p + "mlp.c_fc.weight") + g(p + "mlp.c_fc.bias"))
        x = x + h @ g(p + "mlp.c_proj.weight") + g(p + "mlp.c_proj.bias")
    x = layer_norm(x, g("ln_f.weight"), g("ln_f.bias"))
    return x @ g("wte.weight").T  # (T, V): the tied head


def greedy(args):
    with open(os.path.join(args.dir, "config.json")) as f:
        cfg = json.load(f)
    w = load_weights(args.dir)
    prompt = [int(t) for t in args.prompt_tokens.split(",")]
    print(json.dumps(greedy_decode(lambda ids: forward_logits(cfg, w, ids), prompt, args.tokens)))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--seed", type=int, default=1)
    g = sub.add_parser("greedy")
    g.add_argument("dir")
    g.add_argument("--prompt-tokens", required=True)
    g.add_argument("--tokens", type=int, required=True)
    args = ap.parse_args()
    {"make": make, "greedy": greedy}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
