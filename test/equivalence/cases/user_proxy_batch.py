"""A batch object that logs every attribute read (`__getattribute__`, as proxies and lazy records do, including the
reads of `__class__` that `isinstance` makes), and a Parameter subclass with `__torch_function__` counting the torch
calls made on it; the loop reads `.x` and `.y` only. The logs are printed at the end.
"""
import collections

import torch

reads = collections.Counter()
calls = collections.Counter()


class Batch(object):
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __getattribute__(self, name):
        reads[name] += 1
        return object.__getattribute__(self, name)


class CountedParameter(torch.nn.Parameter):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        calls[getattr(func, "__name__", str(func))] += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def collate(samples):
    xs, ys = zip(*samples)
    return Batch(torch.stack(xs), torch.stack(ys))


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
model[2].bias = CountedParameter(torch.zeros(1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, collate_fn=collate)
for epoch in range(8):
    for b in loader:
        loss = torch.nn.functional.mse_loss(model(b.x), b.y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("batch reads:", sorted(reads.items()))
print("calls on the parameter:", sum(calls.values()))
