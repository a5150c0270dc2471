"""multiprocessing with the spawn start method (as on macOS, or a CUDA trainer's evaluation pool): after training,
a spawned worker reports its sorted environment names, sys.path's entries outside the working directory and the
modules it has whose name holds "gpuwise". A spawned interpreter is a fresh Python; it must see what it sees
without doctor. (torch is imported in the main block, so the spawned worker, which imports the script again,
starts light.)
"""
import multiprocessing as mp
import os
import sys


def report(q):
    q.put(("env", sorted(os.environ)))
    q.put(("path", [p.replace(sys.prefix, "PREFIX") for p in sys.path if not p.startswith(os.getcwd())]))
    q.put(("modules", sorted(m for m in sys.modules if "gpuwise" in m)))


if __name__ == "__main__":
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
    for step in range(64):
        x, y = data[step % 8]
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss %.6f" % loss.item(), flush=True)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=report, args=(q,))
    p.start()
    for _ in range(3):
        print("worker", *q.get())
    p.join()
    print("worker exit", p.exitcode)
