"""A TorchDispatchMode that counts every aten op the training runs (as op-counting and FLOP-counting tools do),
active around the whole loop; the total and the counts by op are printed.
"""
import collections

import torch
from torch.utils._python_dispatch import TorchDispatchMode

counts = collections.Counter()


class Count(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        counts[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
with Count():
    for step in range(40):
        i = (step % 8) * 8
        loss = torch.nn.functional.mse_loss(model(xs[i : i + 8]), ys[i : i + 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("ops:", sum(counts.values()))
print("by op:", sorted(counts.items()))
