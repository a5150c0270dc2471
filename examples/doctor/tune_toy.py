"""A CPU stand-in for a training script whose GPU memory runs out above some batch size, for `gpuwise tune`'s
tests: it trains a small MLP and raises torch.cuda.OutOfMemoryError (with PyTorch's own message) in the forward
pass of step `--oom-step` when the batch is larger than `--fits`, as a real GPU would.

    gpuwise tune --param batch_size=1..64 -- python examples/doctor/tune_toy.py --batch-size {batch_size} --fits 40

Options for the tests: several ranks (RANK set by the launcher) where only one runs out of memory while the
others step very slowly (as ranks waiting for it in a collective would hang), a crash that is not out of memory,
slow steps (to interrupt).
The script knows nothing of gpuwise.
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def out_of_memory(batch):
    msg = "CUDA out of memory. Tried to allocate %d.00 MiB (GPU 0; 79.11 GiB total capacity; simulated by tune_toy.py)" % (batch * 256)
    error = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)  # torch >= 1.13
    raise error(msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--fits", type=int, default=40, help="largest batch that does not run out of memory")
    ap.add_argument("--oom-step", type=int, default=1, help="the step whose forward runs out of memory")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--step-sleep-ms", type=float, default=0.0)
    ap.add_argument("--crash", action="store_true", help="raise a RuntimeError (not out of memory) at step 2")
    ap.add_argument("--oom-rank", type=int, default=-1, help="only this RANK runs out of memory")
    ap.add_argument("--other-rank-sleep-ms", type=float, default=0.0, help="with --oom-rank: step sleep of the other ranks")
    args = ap.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    print("tune_toy: rank %d batch %d" % (rank, args.batch_size), flush=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    may_oom = args.oom_rank < 0 or args.oom_rank == rank
    sleep_ms = args.step_sleep_ms if may_oom else args.other_rank_sleep_ms
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    n = args.batch_size * args.steps
    data = TensorDataset(torch.randn(n, 32), torch.randint(0, 4, (n,)))
    step = 0
    for x, y in DataLoader(data, batch_size=args.batch_size):
        step += 1
        if may_oom and args.batch_size > args.fits and step == args.oom_step:
            out_of_memory(args.batch_size)
        if args.crash and step == 2:
            raise RuntimeError("tune_toy: a bug that has nothing to do with memory")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if sleep_ms:
            time.sleep(sleep_ms / 1000.0)
    print("tune_toy: done after %d steps" % step, flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
