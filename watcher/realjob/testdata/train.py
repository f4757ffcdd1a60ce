#!/usr/bin/python3
"""A tiny data-parallel training job for vigil's real-PyTorch e2e tests.

torch.distributed with the gloo backend, one process per rank, launched by
srun (one task per rank: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) or by
torchrun per node (RANK, WORLD_SIZE, LOCAL_RANK). A small MLP on synthetic
data; the gradients are averaged with one all_reduce per step (what DDP
does, in one bucket). Progress lines in a common format,
"[rankR]: epoch E step S/N loss L", every --log-every steps from every rank;
rank 0 saves a checkpoint every --ckpt-every steps.

GLOO_NODE_ADDRS (node=addr,...) binds gloo on each node to the node's own
address (what GLOO_SOCKET_IFNAME does on a real cluster), so that a fault on
one node's address hits that node only.

One fault per run (--fault, on --fault-rank at --fault-step):
  kill    the rank SIGKILLs itself; stop: it SIGSTOPs itself
  desync  the rank skips one gradient all_reduce
  data    the rank opens its next input shard, a FIFO nobody writes
  ckpt    rank 0 spends --pause seconds saving a checkpoint (healthy)
  eval    every rank evaluates for --pause seconds, reading its validation
          set and printing nothing (healthy)
  slow    a child of the rank stops it (SIGSTOP) for --stop-share of every
          1.5 to 2.5 s and lets it go on (SIGCONT) for the rest, for --pause
          seconds: the rank, and its peers waiting for it, run 2-3 times
          slower (a straggler, no hang)
  none    (the network fault, the freezer's, are injected from outside)
Before a fault the rank writes the time to $FAULT_DIR/fault (epoch seconds).
Each rank writes its process id to $FAULT_DIR/pid-RANK once gloo is up (the
test freezes a rank's step through its cgroup).
"""
import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import nolibuv  # noqa: F401 (torchrun's stores where PyTorch lacks libuv)


def layout():
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
    return int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"]), int(os.environ.get("SLURM_LOCALID", 0))


def note_fault(what, rank):
    d = os.environ.get("FAULT_DIR", ".")
    with open(os.path.join(d, "fault.tmp%d" % rank), "w") as f:
        f.write("%.6f %s %d\n" % (time.time(), what, rank))
    os.rename(os.path.join(d, "fault.tmp%d" % rank), os.path.join(d, "fault"))


class Group:
    """The gradient all_reduce: on the default group, or on a gloo group
    bound to this node's address when GLOO_NODE_ADDRS names it."""

    def __init__(self, rank, world, timeout):
        self.pg = None
        addrs = dict(kv.split("=", 1) for kv in os.environ.get("GLOO_NODE_ADDRS", "").split(",") if "=" in kv)
        addr = addrs.get(os.environ.get("SLURMD_NODENAME", ""))
        if addr:
            from torch._C._distributed_c10d import ProcessGroupGloo
            opts = ProcessGroupGloo._Options()
            opts._devices = [ProcessGroupGloo.create_device(hostname=addr)]
            opts._timeout = timeout
            store = dist.PrefixStore("train/", dist.distributed_c10d._get_default_store())
            self.pg = ProcessGroupGloo(store, rank, world, opts)

    def all_reduce(self, t):
        if self.pg is None:
            dist.all_reduce(t)
        else:
            self.pg.allreduce([t]).wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--epoch-steps", type=int, default=50)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--ckpt-every", type=int, default=100)
    p.add_argument("--step-sleep", type=float, default=0.05, help="seconds of 'data loading' per step")
    p.add_argument("--fault", default="none", choices=["none", "kill", "stop", "desync", "data", "ckpt", "eval", "slow"])
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=150)
    p.add_argument("--pause", type=float, default=90, help="seconds of the ckpt or eval phase, or of the slow duty cycle")
    p.add_argument("--stop-share", type=float, default=0.6, help="share of every 2 s the slow rank is stopped")
    p.add_argument("--data", default=".", help="directory of input shards shard-RANK-EPOCH (absent: synthetic)")
    p.add_argument("--ckpt", default="ckpt.pt")
    a = p.parse_args()

    torch.set_num_threads(1)
    rank, world, local = layout()
    timeout = datetime.timedelta(minutes=30)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
    group = Group(rank, world, timeout)
    with open(os.path.join(os.environ.get("FAULT_DIR", "."), "pid-%d" % rank), "w") as f:
        f.write("%d\n" % os.getpid())
    print("[rank%d]: initialised gloo, world %d, local rank %d, torch %s on %s" % (
        rank, world, local, torch.__version__, os.environ.get("SLURMD_NODENAME", "?")), flush=True)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1000 + rank)
    params = list(model.parameters())
    faulty = a.fault_rank == rank

    for step in range(a.steps):
        epoch = step // a.epoch_steps
        if step % a.epoch_steps == 0:
            shard = os.path.join(a.data, "shard-%d-%d" % (rank, epoch))
            if os.path.exists(shard):
                if a.fault == "data" and faulty:
                    note_fault("data", rank)
                with open(shard, "rb") as f:  # a FIFO nobody writes blocks here
                    f.read()
        if faulty and step == a.fault_step and a.fault == "slow":
            note_fault("slow", rank)
            duty_cycle(a.pause, a.stop_share)
        if faulty and step == a.fault_step and a.fault in ("kill", "stop"):
            note_fault(a.fault, rank)
            os.kill(os.getpid(), signal.SIGKILL if a.fault == "kill" else signal.SIGSTOP)
        x = torch.randn(32, 64, generator=gen)
        y = x.sum(1, keepdim=True) * 0.1
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        if a.fault == "desync" and faulty and step == a.fault_step:
            note_fault("desync", rank)
        else:
            flat = torch.cat([q.grad.reshape(-1) for q in params])
            group.all_reduce(flat)
            flat /= world
            off = 0
            for q in params:
                n = q.numel()
                q.grad.copy_(flat[off:off + n].view_as(q))
                off += n
        opt.step()
        if step % a.log_every == 0:
            print("[rank%d]: epoch %d step %d/%d loss %.4f" % (rank, epoch, step, a.steps, loss.item()), flush=True)
        if rank == 0 and step > 0 and step % a.ckpt_every == 0:
            save(model, a.ckpt, 0)
        if step == a.fault_step and a.fault == "ckpt" and rank == 0:
            note_fault("ckpt", rank)
            save(model, a.ckpt, a.pause)
            print("[rank0]: checkpoint saved in %.0fs" % a.pause, flush=True)
        if step == a.fault_step and a.fault == "eval":
            if rank == 0:
                note_fault("eval", rank)
            evaluate(model, gen, a.pause, group, world, a.data)
        time.sleep(a.step_sleep)
    print("[rank%d]: done after %d steps" % (rank, a.steps), flush=True)
    dist.destroy_process_group()


# DUTY is the duty cycle's own process: a fresh interpreter, not a fork of
# the rank (a fork of a multi-threaded process may deadlock in the child).
# Each cycle lasts 1.5 to 2.5 s, at random: a cycle of a length that divides
# the watcher's period would show the sampler the same phase at every
# reading (all stopped, or never).
DUTY = """
import os, random, signal, sys, time
pid, end, share = int(sys.argv[1]), time.time() + float(sys.argv[2]), float(sys.argv[3])
try:
    while time.time() < end and os.getppid() == pid:
        cycle = random.uniform(1.5, 2.5)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(share * cycle)
        os.kill(pid, signal.SIGCONT)
        time.sleep((1 - share) * cycle)
finally:
    os.kill(pid, signal.SIGCONT)
"""


def duty_cycle(seconds, share):
    """Starts a process that stops this one for share of every cycle (about
    2 s) and lets it go on for the rest, for seconds; it lets it go on for
    good before it exits."""
    import subprocess
    subprocess.Popen([sys.executable, "-c", DUTY, str(os.getpid()), str(seconds), str(share)])


def save(model, path, seconds):
    """torch.save, then, for a slow save, 1 MiB/s more for seconds (a
    checkpoint written to slow storage)."""
    torch.save(model.state_dict(), path + ".tmp")
    end = time.time() + seconds
    with open(path + ".tmp", "ab") as f:
        while time.time() < end:
            f.write(b"\0" * (256 << 10))
            f.flush()
            os.fsync(f.fileno())
            time.sleep(0.25)
    os.replace(path + ".tmp", path)


def evaluate(model, gen, seconds, group, world, data):
    """Forward passes over a validation set read from data for seconds,
    printing nothing, then one all_reduce. An evaluation reads its data:
    on a CPU-only test machine the read, not the CPU, is what shows it at
    work (a loaded 2-core machine leaves each rank a few percent of one).
    Ten batches a second read 640 KiB/s, far above the watcher's 1 MiB a
    window; a batch every 10 ms kept the job's three ranks at a whole core
    for the evaluation's 150 s, beside every other test."""
    total, n = torch.zeros(1), 0
    val = os.path.join(data, "val-%d.bin" % dist.get_rank())
    with open(val, "wb") as f:
        f.write(os.urandom(1 << 20))
    end = time.time() + seconds
    with torch.no_grad(), open(val, "rb") as f:
        while time.time() < end:
            if not f.read(64 << 10):
                f.seek(0)
            x = torch.randn(256, 64, generator=gen)
            total += torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True) * 0.1)
            n += 1
            time.sleep(0.1)
    group.all_reduce(total)
    print("eval loss %.4f over %d batches" % (total.item() / world / max(n, 1), n), flush=True)


if __name__ == "__main__":
    sys.exit(main())
