"""A TorchFunctionMode that counts every torch call the training makes (as FLOP counters and tracing tools do),
active around the whole loop, DataLoader included; the counts by function are printed at the end.
"""
import collections

import torch
from torch.overrides import TorchFunctionMode

counts = collections.Counter()


class Count(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        counts[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
with Count():
    for epoch in range(8):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
print("loss %.6f" % loss.item())
print("calls:", sum(counts.values()))
print("by function:", sorted(counts.items()))
