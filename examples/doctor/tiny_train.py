"""A tiny training loop for `gpuwise doctor` (CPU or one GPU): an MLP on random data.

    gpuwise doctor -- python examples/doctor/tiny_train.py --steps 30
    python examples/doctor/tiny_train.py --device cuda --loader-delay-ms 20   # a starved DataLoader

Options let the tests and the GPU checks exercise the probe: a slow dataset (DataLoader wait),
a crash at a step, an exit code, slow steps (to interrupt), an out-of-memory allocation on CUDA;
under --ddp, one rank that raises, kills itself (SIGKILL) or hangs before a collective, or loads
its batches more slowly (--fault-rank).
The script knows nothing of gpuwise.
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class RandomData(Dataset):
    def __init__(self, n, dim, delay_s):
        self.n, self.dim, self.delay_s = n, dim, delay_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay_s:
            time.sleep(self.delay_s)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.dim, generator=g), torch.randint(0, 10, (), generator=g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--loader-delay-ms", type=float, default=0.0, help="sleep per sample in the dataset")
    ap.add_argument("--step-sleep-ms", type=float, default=0.0, help="sleep per step (to interrupt the run)")
    ap.add_argument("--crash-at", type=int, default=0, help="raise RuntimeError at this step")
    ap.add_argument("--oom-at", type=int, default=0, help="allocate far more than the GPU has at this step")
    ap.add_argument("--kill-at", type=int, default=0, help="SIGKILL this process at this step (a rank the OOM killer took)")
    ap.add_argument("--hang-at", type=int, default=0, help="under --ddp: sleep forever at this step, before the loss all_reduce")
    ap.add_argument("--fault-rank", type=int, default=-1, help="the rank --crash-at, --kill-at, --hang-at and --slow-rank-ms apply to (default: every rank)")
    ap.add_argument("--slow-rank-ms", type=float, default=0.0, help="extra sleep per sample in the dataset of --fault-rank")
    ap.add_argument("--allreduce-loss", action="store_true", help="under --ddp: all_reduce the loss every step (for logging)")
    ap.add_argument("--exit-code", type=int, default=0)
    ap.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd"])
    ap.add_argument("--ddp", action="store_true", help="DistributedDataParallel under torchrun (gloo on CPU, nccl on CUDA)")
    args = ap.parse_args()
    if args.ddp:
        import torch.distributed as dist

        dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
        if args.device == "cuda":
            args.device = "cuda:%d" % int(__import__("os").environ.get("LOCAL_RANK", "0"))

    faulty = args.fault_rank < 0 or int(os.environ.get("RANK", "0")) == args.fault_rank
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.dim, args.hidden), torch.nn.ReLU(), torch.nn.LayerNorm(args.hidden), torch.nn.Linear(args.hidden, 10)
    ).to(device)
    if args.ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    delay_ms = args.loader_delay_ms + (args.slow_rank_ms if faulty else 0.0)
    data = RandomData(args.steps * args.batch, args.dim, delay_ms / 1000.0)
    loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers)
    step = 0
    for x, y in loader:
        step += 1
        if step == args.crash_at and faulty:
            raise RuntimeError("tiny_train: crash requested at step %d" % step)
        if step == args.kill_at and faulty:
            os.kill(os.getpid(), 9)
        if step == args.oom_at:
            torch.empty(1 << 50, dtype=torch.uint8, device=device)  # 1 PiB: out of memory on any GPU
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        if args.ddp and (args.allreduce_loss or args.hang_at):
            if step == args.hang_at and faulty:
                time.sleep(1e6)  # tiny_train: hang requested
            logged = loss.detach().clone()
            torch.distributed.all_reduce(logged)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.step_sleep_ms:
            time.sleep(args.step_sleep_ms / 1000.0)
        if step % 10 == 0:
            print("step %d loss %.4f" % (step, loss.item()), flush=True)
    print("tiny_train: done after %d steps" % step, flush=True)
    if args.ddp:
        torch.distributed.destroy_process_group()
    sys.exit(args.exit_code)


if __name__ == "__main__":
    main()
