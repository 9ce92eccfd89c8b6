#!/usr/bin/env python3
"""Training runs of the PyTorch model of torch_reference.py (the authors' structure), to compare with
hdat's at the authors' configuration (width 128, 2 layers, batch 256, lr 1e-3, aux 0.2, shifted query,
concatenated positions). Not used by the build or the tests; needs /usr/bin/python3 with python3-torch.

  --replay STEM   trains from hdat's initial parameters on hdat's batches, as recorded by
                  `bench_sinks --replay STEM` (STEM.json, STEM.bin), and evaluates on hdat's
                  evaluation set: the same run in another implementation (only rounding differs).
  --authors       trains as the authors' script does: its data drawn with Python's `random` (n distinct
                  tokens, the query copies t_k for k uniform in 1..n, shifted; target the successor or,
                  for k = n, the query itself), a DataLoader(shuffle=True) with a short last batch,
                  PyTorch's own initialisation, all seeded by --seed; evaluated on a fresh set of 1000.

Prints one JSON line: induction accuracy and the authors' sink metric of the last layer's heads (mass
on BOS over query rows 1..L-3 divided by those rows' mass, per sequence, averaged).
Usage: torch_train.py --replay STEM [--precision float32]
       torch_train.py --authors --attention linear_unnorm --seed 0 [--epochs 3] [--precision float32]
"""
import argparse
import json
import random
import time

import numpy as np
import torch

from torch_reference import Model, authors_loss, block, pairs


def sink_scores(model, tokens):
    """Per head of the last layer: mean over sequences of Σ_{i=1}^{L-3} A_i0 / Σ_{i=1}^{L-3} Σ_j A_ij."""
    with torch.no_grad():
        model(tokens)
    a = model.blocks[-1].weights[:, :, 1:-2, :]  # (B, H, rows, L)
    return ((a[..., 0].sum(-1)) / (a.sum((-1, -2)) + 1e-9)).mean(0).tolist()


def accuracy(model, tokens, answer):
    with torch.no_grad():
        return (model(tokens)[:, -1, :].argmax(-1) == answer).double().mean().item()


def replay(args):
    meta = json.load(open(args.replay + ".json"))
    c = meta["config"]
    L = c["length"]
    dtype = getattr(torch, args.precision)
    model = Model(c).double()
    with torch.no_grad():
        for param, name, f in pairs(model, meta):
            param.copy_(f(block(meta, name)))
    model = model.to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    stream = np.fromfile(args.replay + ".bin", dtype=np.int32)
    ev = meta["eval"]
    eval_tokens = torch.tensor(ev["tokens"]).view(ev["B"], ev["L"])
    eval_answer = torch.tensor(ev["answer"])
    pos, step, curve = 0, 0, []
    start = time.process_time()
    while pos < len(stream):
        B = int(stream[pos])
        tokens = torch.from_numpy(stream[pos + 1:pos + 1 + B * L].astype(np.int64)).view(B, L)
        targets = torch.from_numpy(stream[pos + 1 + B * L:pos + 1 + 2 * B * L].astype(np.int64)).view(B, L)
        pos += 1 + 2 * B * L
        opt.zero_grad()
        authors_loss(model(tokens), targets, c["aux_weight"]).backward()
        opt.step()
        step += 1
        if step % 391 == 0:
            curve.append((step, round(accuracy(model, eval_tokens, eval_answer), 4)))
    print(json.dumps({"run": "PyTorch replay of hdat's stream", "stem": args.replay, "precision": args.precision,
                      "attention": c["attention"], "seed": c["seed"], "steps": step,
                      "accuracy": accuracy(model, eval_tokens, eval_answer),
                      "sink_score": [round(x, 4) for x in sink_scores(model, eval_tokens)], "curve": curve,
                      "hdat_accuracy": meta["hdat"]["accuracy"],
                      "hdat_sink_score": [round(x, 4) for x in meta["hdat"]["sink_score"]],
                      "cpu_seconds": round(time.process_time() - start, 1)}), flush=True)


class AuthorsData(torch.utils.data.Dataset):
    def __init__(self, count, vocab=50, n=10, shift=True):
        self.items = []
        for _ in range(count):
            t = random.sample(range(1, vocab), n)
            k = random.randint(0, n - 1)  # 0-based position of the copied token
            q = t[k] + (vocab if shift else 0)
            seq = [0] + t + [q, (t + [q])[k + 1]]
            s = torch.tensor(seq)
            self.items.append((s[:-1], s[1:]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def authors(args):
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    c = {"width": 128, "heads": args.heads, "layers": 2, "mlp_hidden": 512, "vocab": 100, "n_out": 100, "max_len": 12,
         "positions": args.positions, "attention": args.attention}
    model = Model(c, eps=1e-9).to(getattr(torch, args.precision))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    train = AuthorsData(100000)
    test = AuthorsData(1000)
    loader = torch.utils.data.DataLoader(train, batch_size=256, shuffle=True)
    eval_tokens = torch.stack([x for x, _ in test.items])
    eval_answer = torch.stack([y[-1] for _, y in test.items])
    curve, start = [], time.process_time()
    for epoch in range(args.epochs):
        for tokens, targets in loader:
            opt.zero_grad()
            authors_loss(model(tokens), targets, 0.2).backward()
            opt.step()
        curve.append((epoch + 1, round(accuracy(model, eval_tokens, eval_answer), 4)))
    print(json.dumps({"run": "PyTorch, the authors' way", "precision": args.precision, "attention": args.attention,
                      "seed": args.seed, "heads": args.heads, "lr": args.lr, "epochs": args.epochs,
                      "accuracy": accuracy(model, eval_tokens, eval_answer),
                      "sink_score": [round(x, 4) for x in sink_scores(model, eval_tokens)], "curve": curve,
                      "cpu_seconds": round(time.process_time() - start, 1)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replay")
    ap.add_argument("--authors", action="store_true")
    ap.add_argument("--attention", default="linear_unnorm")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--positions", default="concat")
    ap.add_argument("--precision", default="float32", choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.replay:
        replay(args)
    elif args.authors:
        authors(args)
    else:
        ap.error("give --replay STEM or --authors")


if __name__ == "__main__":
    main()
