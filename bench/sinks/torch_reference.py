#!/usr/bin/env python3
"""The attention-sink transformer of validation/sinks written in PyTorch the way the authors'
training code (tml-epfl/softmax: separate q/k/v projections, attention functions, two cross-entropy
terms) builds it, for a side-by-side speed comparison and an independent check of the C++ gradient.
Not used by the build or the tests; needs Debian's python3-torch (/usr/bin/python3).

1. Reads the dump written by `bench_sinks --dump FILE.json` (parameters, one batch, the C++
   loss and gradient), loads the same parameters (the C++ fused W_qkv split into q, k, v) and compares
   the loss and the gradient of every parameter block in float64: both sides compute the same function.
2. Times training steps (forward, backward, AdamW; batches made beforehand, drawn as the authors' data:
   the query may copy any of the n tokens) on the given number of threads, in float32 and/or float64,
   and prints wall and CPU seconds per step as JSON lines.

Usage: /usr/bin/python3 torch_reference.py DUMP.json [--steps 50] [--threads 1]
                                         [--precision float32|float64|both] [--skip-check]
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def attention_weights(kind, q, k, mask, eps):
    """Weights (B, H, L, L) of one attention kind from queries and keys (B, H, L, d_h)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    if kind == "softmax":
        s = (q @ k.transpose(-2, -1)) * scale
        return torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
    if kind.startswith("linear"):  # elu+1 features, no scale
        w = (F.elu(q) + 1) @ (F.elu(k) + 1).transpose(-2, -1)
    else:
        s = (q @ k.transpose(-2, -1)) * scale
        if kind.startswith("sigmoid"):
            w = torch.sigmoid(s)
        elif kind.startswith("elu"):
            w = F.elu(s) + 1
        elif kind.startswith("raw_dotproduct"):
            w = s
        else:
            raise ValueError("attention kind not in the reference: " + kind)
    w = w.masked_fill(~mask, 0.0)
    if kind == "raw_dotproduct_norm":
        total = w.sum(-1, keepdim=True)
        return w / torch.maximum(total.abs(), torch.ones_like(total))
    if kind.endswith("_norm"):
        return w / (w.sum(-1, keepdim=True) + eps)
    return w


class Block(nn.Module):
    def __init__(self, d, heads, hidden, kind, eps):
        super().__init__()
        self.heads, self.kind, self.eps = heads, kind, eps
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x, mask):
        B, L, d = x.shape
        h = self.norm1(x)
        split = lambda t: t.view(B, L, self.heads, d // self.heads).transpose(1, 2)
        a = attention_weights(self.kind, split(self.q(h)), split(self.k(h)), mask, self.eps)
        self.weights = a.detach()  # (B, H, L, L), for the sink metric
        z = (a @ split(self.v(h))).transpose(1, 2).reshape(B, L, d)
        x = x + self.o(z)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, c, eps=0.0):
        super().__init__()
        d = c["width"]
        self.concat = c["positions"] == "concat"
        d_tok = d // 2 if self.concat else d
        self.tok = nn.Embedding(c["vocab"], d_tok)
        self.pos = nn.Embedding(c["max_len"], d - d_tok if self.concat else d)
        self.blocks = nn.ModuleList(Block(d, c["heads"], c["mlp_hidden"], c["attention"], eps) for _ in range(c["layers"]))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, c["n_out"])

    def forward(self, tokens):
        B, L = tokens.shape
        pos = self.pos(torch.arange(L).expand(B, L))
        x = torch.cat([self.tok(tokens), pos], dim=-1) if self.concat else self.tok(tokens) + pos
        mask = torch.ones(L, L, dtype=torch.bool).tril()
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.lnf(x))


def block(dump, name):
    t = dump["theta"][name]  # column-major rows x cols
    return torch.tensor(t["values"], dtype=torch.float64).view(t["cols"], t["rows"]).T.contiguous()


def grad_block(dump, name, rows, cols):
    return torch.tensor(dump["grad"][name], dtype=torch.float64).view(cols, rows).T


def pairs(model, dump):
    """(PyTorch parameter, C++ block name, transform of the C++ block into the parameter's shape)."""
    d = dump["config"]["width"]
    out = [(model.tok.weight, "E", lambda m: m.T), (model.pos.weight, "P", lambda m: m.T)]
    for l, b in enumerate(model.blocks):
        p = f"L{l}."
        out += [(b.norm1.weight, p + "ln1_g", lambda m: m[:, 0]), (b.norm1.bias, p + "ln1_b", lambda m: m[:, 0])]
        for i, lin in enumerate((b.q, b.k, b.v)):  # C++ W_qkv: columns queries | keys | values
            out += [(lin.weight, p + "Wqkv", lambda m, i=i: m[:, i * d:(i + 1) * d].T),
                    (lin.bias, p + "bqkv", lambda m, i=i: m[i * d:(i + 1) * d, 0])]
        out += [(b.o.weight, p + "Wo", lambda m: m.T), (b.o.bias, p + "bo", lambda m: m[:, 0]),
                (b.norm2.weight, p + "ln2_g", lambda m: m[:, 0]), (b.norm2.bias, p + "ln2_b", lambda m: m[:, 0]),
                (b.fc1.weight, p + "W1", lambda m: m.T), (b.fc1.bias, p + "c1", lambda m: m[:, 0]),
                (b.fc2.weight, p + "W2", lambda m: m.T), (b.fc2.bias, p + "c2", lambda m: m[:, 0])]
    out += [(model.lnf.weight, "lnf_g", lambda m: m[:, 0]), (model.lnf.bias, "lnf_b", lambda m: m[:, 0]),
            (model.head.weight, "Wout", lambda m: m.T), (model.head.bias, "bout", lambda m: m[:, 0])]
    return out


def weighted_ce(logits, targets, weights):
    """Sum over rows of w_r * cross-entropy: the C++ loss (rows with target -1 have weight 0)."""
    flat, t, w = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), weights.reshape(-1)
    return (w * F.cross_entropy(flat, t.clamp(min=0), reduction="none")).sum()


def authors_loss(logits, targets, aux_weight=0.2):
    """The authors' form: mean cross-entropy at the earlier positions times aux_weight, plus the last one's."""
    start = F.cross_entropy(logits[:, :-1, :].transpose(1, 2), targets[:, :-1])
    return aux_weight * start + F.cross_entropy(logits[:, -1, :], targets[:, -1])


def check(dump):
    c = dump["config"]
    B, L = c["batch"], c["length"]
    model = Model(c).double()
    links = pairs(model, dump)
    with torch.no_grad():
        for param, name, f in links:
            param.copy_(f(block(dump, name)))
    tokens = torch.tensor(dump["tokens"]).view(B, L)
    targets = torch.tensor(dump["targets"]).view(B, L)
    weights = torch.tensor(dump["weights"], dtype=torch.float64).view(B, L)
    loss = weighted_ce(model(tokens), targets, weights)
    loss.backward()
    worst, where = 0.0, ""
    # Relative to each block's scale, but not below 1e-9 of the largest component: some blocks are zero
    # up to rounding (the key bias under softmax, which adds a constant to every score of a row).
    refs = []
    for param, name, f in links:
        t = dump["theta"][name]
        refs.append(f(grad_block(dump, name, t["rows"], t["cols"])))
    floor = 1e-9 * max(r.abs().max().item() for r in refs)
    for (param, name, f), ref in zip(links, refs):
        gap = ((param.grad - ref).abs().max() / max(ref.abs().max().item(), floor)).item()
        if gap > worst:
            worst, where = gap, name
    print(json.dumps({"check": "same parameters and batch, float64", "attention": c["attention"], "loss_cpp": dump["loss"],
                      "loss_torch": loss.item(), "loss_rel_diff": abs(loss.item() - dump["loss"]) / abs(dump["loss"]),
                      "grad_max_rel_diff": worst, "worst_block": where}), flush=True)


def authors_batches(c, count, generator):
    """Induction batches as the authors draw them: n distinct tokens, the query copies t_k for k in 1..n
    (shifted by the vocabulary when shift_query), the target is the successor (the query itself for k = n)."""
    B, L, n, V = c["batch"], c["length"], c["n_tokens"], c["task_vocab"]
    shift = V if c["shift_query"] else 0
    out = []
    for _ in range(count):
        tokens = torch.zeros(B, L, dtype=torch.long)
        targets = torch.zeros(B, L, dtype=torch.long)
        for b in range(B):
            t = torch.randperm(V - 1, generator=generator)[:n] + 1
            k = int(torch.randint(0, n, (1,), generator=generator))
            q = int(t[k]) + shift
            seq = [0] + t.tolist() + [q]
            tokens[b] = torch.tensor(seq)
            targets[b, :L - 1] = torch.tensor(seq[1:])
            targets[b, L - 1] = int(t[k + 1]) if k + 1 < n else q
        out.append((tokens, targets))
    return out


class SequenceSet(torch.utils.data.Dataset):
    """A pool of sequences served one at a time, as the authors' InductionDataset (a list of tensors)."""

    def __init__(self, batches):
        self.items = [(t, y) for tokens, targets in batches for t, y in zip(tokens, targets)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def time_training(c, dtype, steps, threads, batches, loader):
    torch.manual_seed(0)
    model = Model(c).to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # With --loader the batches come from a DataLoader(shuffle=True) over the pool, as in the authors'
    # training loop (their step includes collating 256 sequences); otherwise from the prepared list.
    stream = None
    if loader:
        data = torch.utils.data.DataLoader(SequenceSet(batches), batch_size=c["batch"], shuffle=True)
        def forever():
            while True:
                yield from data
        stream = forever()

    def step(s):
        tokens, targets = next(stream) if stream else batches[s % len(batches)]
        opt.zero_grad()
        loss = authors_loss(model(tokens), targets)
        loss.backward()
        opt.step()
        return loss

    loss = torch.zeros(())
    for s in range(3):  # warm-up
        loss = step(s)
    wall, cpu = time.perf_counter(), time.process_time()
    for s in range(steps):
        loss = step(s)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"impl": f"PyTorch {torch.__version__} ({str(dtype).replace('torch.', '')}{', DataLoader' if loader else ''})",
                      "attention": c["attention"], "width": c["width"], "heads": c["heads"], "batch": c["batch"],
                      "steps": steps, "threads": threads, "seconds": round(wall, 3),
                      "steps_per_second": round(steps / wall, 3), "cpu_seconds": round(cpu, 3),
                      "steps_per_cpu_second": round(steps / cpu, 3), "final_loss": round(loss.item(), 6)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", default="both", choices=["float32", "float64", "both"])
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--loader", action="store_true", help="also time steps that draw their batch from a DataLoader")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dump = json.load(open(args.dump))
    if not args.skip_check:
        check(dump)
    batches = authors_batches(dump["config"], 20, torch.Generator().manual_seed(0))
    for p in (["float32", "float64"] if args.precision == "both" else [args.precision]):
        time_training(dump["config"], getattr(torch, p), args.steps, args.threads, batches, False)
        if args.loader:
            time_training(dump["config"], getattr(torch, p), args.steps, args.threads, batches, True)


if __name__ == "__main__":
    main()
