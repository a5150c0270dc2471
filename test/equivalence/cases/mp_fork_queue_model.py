"""torch.multiprocessing with fork: a child fine-tunes the trained model a few steps and sends it back through a Queue.

The forked child inherits the probe's state; the model crosses the Queue by pickling (shared-memory tensors).
"""
import queue as queue_mod

import torch
import torch.multiprocessing as mp


def finetune(model, data, out, received):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in data:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    out.put(model)
    out.put("%.6f" % loss.item())
    received.wait(30)  # the parent takes the tensors' shared memory from this process: stay until it has


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
    for epoch in range(8):
        for x, y in data:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print("loss %.6f" % loss.item(), flush=True)
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    received = ctx.Event()
    child = ctx.Process(target=finetune, args=(model, data, out, received))
    child.start()
    try:
        tuned = out.get(timeout=10)
        print("tuned model back: %s %.6f, child loss %s" % (type(tuned).__name__, tuned(torch.ones(1, 8)).item(), out.get(timeout=10)))
    except queue_mod.Empty:
        print("nothing came back from the child")
    received.set()
    child.join()
    print("child exit code", child.exitcode)
