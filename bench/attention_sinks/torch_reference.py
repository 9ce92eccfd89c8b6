#!/usr/bin/env python3
"""The attention-sink transformer of validation/attention_sinks in PyTorch, for a side-by-side speed
comparison (not used by the build or the tests; needs Debian's python3-torch: /usr/bin/python3).

1. Reads the dump written by `bench_attention_sinks --dump FILE.json` (parameters, one batch, the C++
   loss and gradient), loads the same parameters into the PyTorch model and compares loss and gradient
   in float64: both sides compute the same function.
2. Times the same training loop (forward, backward, AdamW; batches made beforehand) on one thread, in
   float64 (the C++ precision) and float32, and prints steps per second as JSON lines.

Usage: /usr/bin/python3 torch_reference.py DUMP.json [--steps 300] [--threads 1]
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, hidden, attention):
        super().__init__()
        self.d, self.heads, self.attention = d, heads, attention
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        B, L, d = x.shape
        H, dh = self.heads, d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(B, L, H, dh).transpose(1, 2) for t in (q, k, v))
        mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
        if self.attention == "softmax":
            s = (q @ k.transpose(-2, -1)) / math.sqrt(dh)
            a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        elif self.attention in ("sigmoid_norm", "sigmoid_unnorm"):
            a = torch.sigmoid((q @ k.transpose(-2, -1)) / math.sqrt(dh)) * mask
            if self.attention == "sigmoid_norm":
                a = a / a.sum(-1, keepdim=True)
        elif self.attention in ("linear_norm", "linear_unnorm"):
            a = (F.elu(q) + 1) @ (F.elu(k) + 1).transpose(-2, -1) * mask
            if self.attention == "linear_norm":
                a = a / a.sum(-1, keepdim=True)
        else:
            raise ValueError("attention kind not in the reference: " + self.attention)
        z = (a @ v).transpose(1, 2).reshape(B, L, d)
        x = x + self.out(z)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["width"]
        self.tok = nn.Embedding(c["vocab"], d // 2)  # concatenated positions: half the width each
        self.pos = nn.Embedding(c["max_len"], d - d // 2)
        self.blocks = nn.ModuleList(Block(d, c["heads"], c["mlp_hidden"], c["attention"]) for _ in range(c["layers"]))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, c["n_out"])

    def forward(self, tokens):
        B, L = tokens.shape
        pos = torch.arange(L, device=tokens.device).expand(B, L)
        x = torch.cat([self.tok(tokens), self.pos(pos)], dim=-1)
        for b in self.blocks:
            x = b(x)
        return self.head(self.lnf(x))


def block(dump, name):
    t = dump["theta"][name]
    # Column-major rows x cols in the dump.
    return torch.tensor(t["values"], dtype=torch.float64).view(t["cols"], t["rows"]).T.contiguous()


def load(model, dump):
    """Parameters of the C++ layout -> PyTorch (Linear weights are d_out x d_in: transposes)."""
    with torch.no_grad():
        model.tok.weight.copy_(block(dump, "E").T)
        model.pos.weight.copy_(block(dump, "P").T)
        for l, b in enumerate(model.blocks):
            p = f"L{l}."
            b.ln1.weight.copy_(block(dump, p + "ln1_g")[:, 0]); b.ln1.bias.copy_(block(dump, p + "ln1_b")[:, 0])
            b.qkv.weight.copy_(block(dump, p + "Wqkv").T); b.qkv.bias.copy_(block(dump, p + "bqkv")[:, 0])
            b.out.weight.copy_(block(dump, p + "Wo").T); b.out.bias.copy_(block(dump, p + "bo")[:, 0])
            b.ln2.weight.copy_(block(dump, p + "ln2_g")[:, 0]); b.ln2.bias.copy_(block(dump, p + "ln2_b")[:, 0])
            b.fc1.weight.copy_(block(dump, p + "W1").T); b.fc1.bias.copy_(block(dump, p + "c1")[:, 0])
            b.fc2.weight.copy_(block(dump, p + "W2").T); b.fc2.bias.copy_(block(dump, p + "c2")[:, 0])
        model.lnf.weight.copy_(block(dump, "lnf_g")[:, 0]); model.lnf.bias.copy_(block(dump, "lnf_b")[:, 0])
        model.head.weight.copy_(block(dump, "Wout").T); model.head.bias.copy_(block(dump, "bout")[:, 0])


def weighted_ce(logits, targets, weights):
    """Sum over rows of w_r * cross-entropy (the C++ loss; rows with target -1 have weight 0)."""
    flat, t, w = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), weights.reshape(-1)
    ce = F.cross_entropy(flat, t.clamp(min=0), reduction="none")
    return (w * ce).sum()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dump = json.load(open(args.dump))
    c = dump["config"]
    B, L = c["batch"], c["length"]
    tokens = torch.tensor(dump["tokens"]).view(B, L)
    targets = torch.tensor(dump["targets"]).view(B, L)
    weights = torch.tensor(dump["weights"], dtype=torch.float64).view(B, L)

    # 1. Same function: loss and gradient of the C++ parameters, in float64.
    model = Model(c).double()
    load(model, dump)
    loss = weighted_ce(model(tokens), targets, weights)
    loss.backward()
    grads = {"E": model.tok.weight.grad.T, "P": model.pos.weight.grad.T, "Wout": model.head.weight.grad.T,
             "L0.Wqkv": model.blocks[0].qkv.weight.grad.T, "L1.W1": model.blocks[-1].fc1.weight.grad.T,
             "L0.ln1_g": model.blocks[0].ln1.weight.grad[:, None]}
    worst = 0.0
    for name, g in grads.items():
        ref = torch.tensor(dump["grad"][name], dtype=torch.float64).view(g.shape[1], g.shape[0]).T
        worst = max(worst, ((g - ref).abs().max() / (ref.abs().max() + 1e-300)).item())
    print(json.dumps({"check": "same parameters, float64", "loss_cpp": dump["loss"], "loss_torch": loss.item(),
                      "loss_rel_diff": abs(loss.item() - dump["loss"]) / abs(dump["loss"]),
                      "grad_max_rel_diff": worst}))

    # 2. Speed of the training loop (batches made beforehand, as in the C++ benchmark).
    g = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(50):
        toks = torch.zeros(B, L, dtype=torch.long)
        tg = torch.zeros(B, L, dtype=torch.long)
        w = torch.zeros(B, L)
        n = L - 2
        for b in range(B):
            t = torch.randperm(c["vocab"] - 1, generator=g)[:n] + 1
            k = int(torch.randint(1, n, (1,), generator=g))
            toks[b, 0], toks[b, 1:n + 1], toks[b, n + 1] = 0, t, t[k - 1]
            tg[b, :L - 1] = toks[b, 1:]
            tg[b, L - 1] = t[k]
        w[:, :L - 1] = 0.2 / (B * (L - 1))
        w[:, L - 1] = 1.0 / B
        batches.append((toks, tg, w))
    for dtype in (torch.float64, torch.float32):
        torch.manual_seed(0)
        m = Model(c).to(dtype)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        bw = [(a, b_, w_.to(dtype)) for a, b_, w_ in batches]
        for s in range(10):  # warm-up
            a, b_, w_ = bw[s % 50]
            opt.zero_grad(); weighted_ce(m(a), b_, w_).backward(); opt.step()
        start = time.perf_counter()
        for s in range(args.steps):
            a, b_, w_ = bw[s % 50]
            opt.zero_grad()
            lo = weighted_ce(m(a), b_, w_)
            lo.backward()
            opt.step()
        sec = time.perf_counter() - start
        print(json.dumps({"impl": f"PyTorch {torch.__version__} ({str(dtype).replace('torch.', '')})",
                          "attention": c["attention"], "width": c["width"], "batch": B, "steps": args.steps,
                          "threads": args.threads, "seconds": round(sec, 3),
                          "steps_per_second": round(args.steps / sec, 2), "final_loss": round(lo.item(), 6)}))


if __name__ == "__main__":
    main()
