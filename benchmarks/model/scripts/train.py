"""vigil's model benchmark: a few real training steps of a small model.

vigil-prolog writes this script to a private directory and runs one copy per
device (or per CPU rank), data-parallel over the vendor's collective library:
NCCL on CUDA, HCCL through torch_npu, gloo on CPU. The data are synthetic and
the seed is fixed, so a healthy node's loss curve is the same every time for a
given model, dtype and device kind; the global batch is split over the ranks
and each rank's gradient weighted by its share before they are summed, so the
curve does not depend on the rank count.

Each rank prints one JSON object per line on stdout, which vigil reads:
  {"e": "start", "rank", "world", "device", "name", "torch"}
  {"e": "computed", "rank", "step", "ms"}      forward+backward done (before the collective)
  {"e": "step", "rank", "step", "ms", "loss", "losses", "computes"}
      a step done: its wall time, the loss of the whole batch, each rank's
      own loss and compute time (all ranks', gathered, in rank order)
  {"e": "done", "rank", "steps", "items_per_s"}
An exception ends the rank with its traceback on stderr and exit status 1.

A failure inside a collective (a peer went away) ends the rank with exit
status 3, which says nothing against its own device.

Environment: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT as for
torch.distributed; VIGIL_MODEL_DEVICE is "cuda", "npu" or "cpu", and
VIGIL_MODEL_DEVICE_INDEX the device this rank uses.
Arguments: --model gpt|resnet, --steps N, --dtype float32|bfloat16|float16,
--batch N (global), --width N, --layers N, --seed N, --threads N.
"""

import argparse
import json
import math
import os
import sys
import time


def emit(**kw):
    sys.stdout.write(json.dumps(kw, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def collective(fn, *args):
    """Runs a collective; a failure there is a lost peer, not this rank's fault: exit 3."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001  (any failure of the collective)
        sys.stderr.write(f"peer lost in {fn.__name__}: {e}\n")
        sys.stderr.flush()
        os._exit(3)


def hook(loss, rank, step):
    """The identity; a test copy of this script replaces it to inject a fault."""
    return loss


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("gpt", "resnet"), required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--width", type=int, default=0)
    p.add_argument("--layers", type=int, default=0)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=0)
    return p.parse_args()


def main():
    args = parse_args()
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    index = int(os.environ.get("VIGIL_MODEL_DEVICE_INDEX", local))
    kind = os.environ.get("VIGIL_MODEL_DEVICE", "cpu")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if kind == "cuda":
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        backend = "nccl"
        name = torch.cuda.get_device_name(index)
    elif kind == "npu":
        import torch_npu  # noqa: F401  (registers the npu device and hccl)

        torch.npu.set_device(index)
        device = torch.device("npu", index)
        backend = "hccl"
        name = torch.npu.get_device_name(index)
    else:
        device = torch.device("cpu")
        backend = "gloo"
        name = "cpu"
    dtype = getattr(torch, args.dtype)
    if world > 1:
        dist.init_process_group(backend, rank=rank, world_size=world)
    emit(e="start", rank=rank, world=world, device=str(device), name=name, torch=torch.__version__)

    if args.batch < world:
        raise SystemExit(f"global batch {args.batch} is smaller than the {world} ranks")
    # This rank's shard of the global batch, and its weight in the global
    # mean: the gradients summed over the ranks are the whole batch's.
    lo, hi = args.batch * rank // world, args.batch * (rank + 1) // world
    weight = (hi - lo) / args.batch

    torch.manual_seed(args.seed)
    if args.model == "gpt":
        model = GPT(torch, nn, F, vocab=64, width=args.width or 128, layers=args.layers or 2, heads=4, ctx=32)
        data = MarkovText(torch, vocab=64, ctx=32, seed=args.seed)
    else:
        model = ResNet(nn, F, width=args.width or 16, blocks=args.layers or 2, classes=10)
        data = Shapes(torch, classes=10, size=32, seed=args.seed)
    model = model.to(device=device, dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)

    def sync():
        if kind == "cuda":
            torch.cuda.synchronize(device)
        elif kind == "npu":
            torch.npu.synchronize()

    items = 0
    t_start = None
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        x, y = data.batch(step, args.batch)
        x, y = x[lo:hi].to(device), y[lo:hi].to(device)
        if x.is_floating_point():
            x = x.to(dtype)
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = F.cross_entropy(out.float().reshape(-1, out.shape[-1]), y.reshape(-1))
        loss = hook(loss, rank, step)
        (loss * weight).backward()
        sync()
        compute_ms = (time.perf_counter() - t0) * 1000
        emit(e="computed", rank=rank, step=step, ms=round(compute_ms, 3))
        mine = torch.tensor([loss.item(), compute_ms, weight], dtype=torch.float64, device=device)
        if world > 1:
            gathered = [torch.zeros_like(mine) for _ in range(world)]
            collective(dist.all_gather, gathered, mine)
        else:
            gathered = [mine]
        losses = [g[0].item() for g in gathered]
        computes = [round(g[1].item(), 3) for g in gathered]
        weights = [g[2].item() for g in gathered]
        if not all(math.isfinite(v) for v in losses):
            # Someone's loss is not finite: stop before the update spreads it.
            emit(e="step", rank=rank, step=step, ms=round((time.perf_counter() - t0) * 1000, 3),
                 loss=None, losses=[v if math.isfinite(v) else str(v) for v in losses], computes=computes)
            break
        if world > 1:
            for p in model.parameters():
                if p.grad is not None:
                    collective(dist.all_reduce, p.grad)
        opt.step()
        sync()
        ms = (time.perf_counter() - t0) * 1000
        if step == 2:
            t_start = time.perf_counter()
        elif step > 2:
            items += args.batch * (data.ctx if args.model == "gpt" else 1)
        emit(e="step", rank=rank, step=step, ms=round(ms, 3), loss=round(sum(w * v for w, v in zip(weights, losses)), 6),
             losses=[round(v, 6) for v in losses], computes=computes)
    rate = items / (time.perf_counter() - t_start) if t_start and items else 0.0
    emit(e="done", rank=rank, steps=step, items_per_s=round(rate, 1))
    if world > 1:
        dist.destroy_process_group()


class MarkovText:
    """Token sequences drawn from a fixed random Markov chain: learnable text."""

    def __init__(self, torch, vocab, ctx, seed):
        self.torch, self.vocab, self.ctx = torch, vocab, ctx
        g = torch.Generator().manual_seed(seed)
        logits = torch.randn(vocab, vocab, generator=g) * 3
        self.trans = torch.softmax(logits, dim=1)
        self.seed = seed

    def batch(self, step, n):
        torch = self.torch
        g = torch.Generator().manual_seed(self.seed * 1000003 + step)
        seq = torch.empty(n, self.ctx + 1, dtype=torch.long)
        seq[:, 0] = torch.randint(self.vocab, (n,), generator=g)
        for t in range(1, self.ctx + 1):
            seq[:, t] = torch.multinomial(self.trans[seq[:, t - 1]], 1, generator=g).squeeze(1)
        return seq[:, :-1], seq[:, 1:]


class Shapes:
    """Images of a fixed template per class under noise: learnable pictures."""

    ctx = 1

    def __init__(self, torch, classes, size, seed):
        self.torch = torch
        g = torch.Generator().manual_seed(seed)
        coarse = torch.randn(classes, 3, 4, 4, generator=g)
        self.templates = coarse.repeat_interleave(size // 4, dim=2).repeat_interleave(size // 4, dim=3)
        self.classes, self.seed = classes, seed

    def batch(self, step, n):
        torch = self.torch
        g = torch.Generator().manual_seed(self.seed * 1000003 + step)
        y = torch.randint(self.classes, (n,), generator=g)
        x = self.templates[y] + 1.0 * torch.randn(n, *self.templates.shape[1:], generator=g)
        return x, y


def GPT(torch, nn, F, vocab, width, layers, heads, ctx):
    """A small decoder-only transformer (pre-norm blocks, causal attention)."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
            self.register_buffer("mask", torch.ones(ctx, ctx).tril().bool(), persistent=False)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(c // heads)
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.mlp(self.ln2(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, width)
            self.pos = nn.Embedding(ctx, width)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx):
            pos = self.pos.weight[: idx.shape[1]]
            x = self.tok(idx) + pos
            return self.head(self.ln(self.blocks(x)))

    return Model()


def ResNet(nn, F, width, blocks, classes):
    """A small residual CNN; GroupNorm, so the curve is the same on any rank count."""

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.n1 = nn.GroupNorm(4, cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.n2 = nn.GroupNorm(4, cout)
            self.skip = None if stride == 1 and cin == cout else nn.Conv2d(cin, cout, 1, stride, bias=False)

        def forward(self, x):
            y = F.relu(self.n1(self.c1(x)))
            y = self.n2(self.c2(y))
            return F.relu(y + (x if self.skip is None else self.skip(x)))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.GroupNorm(4, width), nn.ReLU())
            layers, cin = [], width
            for i in range(blocks):
                cout = width * (2 ** min(i, 2))
                layers.append(Block(cin, cout, 2 if i else 1))
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(x.mean(dim=(2, 3)))

    return Model()


if __name__ == "__main__":
    main()
