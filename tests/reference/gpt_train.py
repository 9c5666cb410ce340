#!/usr/bin/env python3
"""An independent GPT-2 training loop in PyTorch (Debian's python3-torch), written from
Hugging Face's GPT2LMHeadModel math and torch.optim.AdamW, sharing no code with trident:
it loads a Hugging Face GPT-2 directory (config.json + model.safetensors), trains it in
float64 on the sequences given for each step, and prints one JSON line per step:
{"step": s, "loss": L, "grad_norm": G, "lr": lr}, the loss and norm being those of the
weights before the step's update.

  gpt_train.py HF_DIR BATCHES --steps N --total-steps S --lr LR --min-lr M --warmup W
               [--weight-decay 0.1] [--beta1 0.9] [--beta2 0.95] [--eps 1e-8]
               [--grad-clip 1.0] [--eod TOKEN]
               [--optimizer adamw|muon] [--muon-momentum 0.95] [--muon-ns-steps 5]

BATCHES holds one JSON object a line, line k for step k + 1, with "step" and "sequences",
each sequence's "tokens" being its T + 1 tokens (inputs are the first T, targets the last
T), as `trident batch CONFIG --step N --json` prints them.

The conventions: layer norms with config.json's layer_norm_epsilon; the tanh GELU
(gelu_new); a tied head; the loss is the mean cross-entropy over the step's whole batch,
leaving out each prediction made from the end-of-document token (--eod) and dividing by
the tokens counted; the gradient's global norm is clipped to --grad-clip (0: never);
AdamW's decoupled weight decay applies to the matrices (the embeddings included) and not
to biases or norms; the learning rate warms up linearly to --lr over --warmup steps, then
follows a cosine to --min-lr at --total-steps.

With --optimizer muon, the blocks' matrices (attention's and the MLP's; c_attn as its three
q, k and v matrices) follow Muon as Moonlight describes it: M <- mu M + G, the Nesterov
U = G + mu M orthogonalised by 5 quintic Newton-Schulz iterations on U / ||U||_F, and
W <- W (1 - lr wd) - lr 0.2 sqrt(max(A, B)) O for an A x B matrix; the embeddings, biases
and norms stay with AdamW.
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import safetensors_read  # noqa: E402  tests/scripts/safetensors_read.py: the tests' one reader

DTYPES = {"F64": torch.float64, "F32": torch.float32, "BF16": torch.bfloat16,
          "F16": torch.float16}


def load_weights(directory):
    """name (without the "transformer." prefix) -> float64 leaf tensor needing a gradient."""
    weights = {}
    tensors = safetensors_read.read_safetensors(os.path.join(directory, "model.safetensors"))
    for name, (dtype, shape, raw) in tensors.items():
        if name == "lm_head.weight":
            continue  # tied to wte
        t = torch.frombuffer(bytearray(raw), dtype=DTYPES[dtype]).reshape(shape)
        key = name[len("transformer."):] if name.startswith("transformer.") else name
        weights[key] = t.to(torch.float64).clone().requires_grad_(True)
    return weights


def gelu_new(x):
    # GPT-2's GELU, the tanh approximation (transformers' NewGELUActivation).
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class Gpt2:
    """GPT2LMHeadModel's forward over a dict of weights, Conv1D weights being [in, out]."""

    def __init__(self, config, w):
        self.layers, self.heads = config["n_layer"], config["n_head"]
        self.eps = config.get("layer_norm_epsilon", 1e-5)
        self.w = w

    def norm(self, x, prefix):
        return F.layer_norm(x, x.shape[-1:], self.w[prefix + ".weight"], self.w[prefix + ".bias"],
                            self.eps)

    def conv1d(self, x, prefix):
        return x @ self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def attention(self, x, prefix):
        B, T, C = x.shape
        hd = C // self.heads
        q, k, v = self.conv1d(x, prefix + ".c_attn").split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, hd).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        y = scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v
        return self.conv1d(y.transpose(1, 2).reshape(B, T, C), prefix + ".c_proj")

    def logits(self, ids):
        T = ids.shape[1]
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][:T]
        for i in range(self.layers):
            p = "h.%d." % i
            x = x + self.attention(self.norm(x, p + "ln_1"), p + "attn")
            m = gelu_new(self.conv1d(self.norm(x, p + "ln_2"), p + "mlp.c_fc"))
            x = x + self.conv1d(m, p + "mlp.c_proj")
        return self.norm(x, "ln_f") @ self.w["wte.weight"].t()


def lr_at(step, a):
    if a.warmup > 0 and step <= a.warmup:
        return a.lr * step / a.warmup
    progress = min(1.0, (step - a.warmup) / max(1, a.total_steps - a.warmup))
    return a.min_lr + (a.lr - a.min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


def newton_schulz(g, steps):
    """Keller Jordan's quintic iteration, on the matrix's wide orientation."""
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / (torch.linalg.matrix_norm(x) + 1e-7)
    for _ in range(steps):
        s = x @ x.T
        x = a * x + (b * s + c * s @ s) @ x
    return x.T if g.shape[0] > g.shape[1] else x


class Muon:
    """Muon over Hugging Face Conv1D weights ([in, out]: the matrix is their transpose)."""

    def __init__(self, weights, momentum, ns_steps, weight_decay):
        self.weights, self.momentum, self.ns_steps = weights, momentum, ns_steps
        self.weight_decay = weight_decay
        self.buffers = {name: torch.zeros_like(w) for name, w in weights.items()}

    @torch.no_grad()
    def step(self, lr):
        for name, w in self.weights.items():
            m = self.buffers[name].mul_(self.momentum).add_(w.grad)
            u = (w.grad + self.momentum * m).T  # [out, in]
            pieces = u.chunk(3, dim=0) if name.endswith("c_attn.weight") else [u]
            update = torch.cat([newton_schulz(p, self.ns_steps) * 0.2 * math.sqrt(max(p.shape))
                                for p in pieces], dim=0)
            w.mul_(1 - lr * self.weight_decay).sub_(lr * update.T)


def step_loss(model, tokens, eod):
    """The mean next-token cross-entropy of the batch, predictions from `eod` left out."""
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    logits = model.logits(inputs)
    losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                             reduction="none")
    counted = (inputs != eod).reshape(-1).to(torch.float64) if eod >= 0 else torch.ones_like(losses)
    return (losses * counted).sum() / max(1.0, counted.sum().item())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("batches")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--total-steps", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--min-lr", type=float, required=True)
    ap.add_argument("--warmup", type=int, required=True)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--eod", type=int, default=-1)
    ap.add_argument("--optimizer", choices=("adamw", "muon"), default="adamw")
    ap.add_argument("--muon-momentum", type=float, default=0.95)
    ap.add_argument("--muon-ns-steps", type=int, default=5)
    a = ap.parse_args()

    torch.manual_seed(0)  # nothing is random; set so that nothing could differ run to run
    config = json.load(open(os.path.join(a.hf_dir, "config.json")))
    assert config.get("activation_function", "gelu_new") in ("gelu_new", "gelu_pytorch_tanh")
    weights = load_weights(a.hf_dir)
    model = Gpt2(config, weights)
    muon = None
    if a.optimizer == "muon":
        matrices = {n: t for n, t in weights.items() if t.dim() == 2 and n.startswith("h.")}
        muon = Muon(matrices, a.muon_momentum, a.muon_ns_steps, a.weight_decay)
    rest = [t for n, t in weights.items() if muon is None or n not in muon.weights]
    decayed = [t for t in rest if t.dim() == 2]
    plain = [t for t in rest if t.dim() != 2]
    optimizer = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": a.weight_decay},
         {"params": plain, "weight_decay": 0.0}],
        lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)

    batches = [json.loads(line) for line in open(a.batches) if line.strip()]
    if len(batches) < a.steps:
        sys.exit("%s has %d steps' batches, %d needed" % (a.batches, len(batches), a.steps))
    for step in range(1, a.steps + 1):
        batch = batches[step - 1]
        assert batch["step"] == step, (batch["step"], step)
        tokens = torch.tensor([s["tokens"] for s in batch["sequences"]], dtype=torch.long)
        lr = lr_at(step, a)
        for t in weights.values():  # Muon's matrices are not in the AdamW optimizer
            t.grad = None
        loss = step_loss(model, tokens, a.eod)
        loss.backward()
        grads = [t.grad for t in weights.values()]
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
        if a.grad_clip > 0 and norm > a.grad_clip:
            for g in grads:
                g.mul_(a.grad_clip / (norm + 1e-6))
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        if muon is not None:
            muon.step(lr)
        print(json.dumps({"step": step, "loss": loss.item(), "grad_norm": norm, "lr": lr}),
              flush=True)


if __name__ == "__main__":
    main()
