"""multiprocessing with the spawn start method: the trained model is sent to a child process, which evaluates it.

Spawn pickles the Process arguments (the model with whatever is attached to it) and the child imports torch
again, so under doctor it also starts with the probe's environment.
"""
import multiprocessing as mp

import torch


def evaluate(model, queue):
    with torch.no_grad():
        queue.put("%.6f" % model(torch.ones(1, 8)).item())


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    for epoch in range(8):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print("loss %.6f parent %.6f" % (loss.item(), model(torch.ones(1, 8)).item()), flush=True)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=evaluate, args=(model, queue))
    child.start()
    print("child", queue.get(timeout=60))
    child.join()
    print("child exit code", child.exitcode)
