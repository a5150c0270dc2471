"""A module that overrides `parameters()`, `named_parameters()`, `children()`, `modules()` and `buffers()` (to hide
a frozen part, or to count them, as some libraries do): each call is counted, and the counts are printed at the end.
"""
import collections

import torch

calls = collections.Counter()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 1)
        self.register_buffer("steps", torch.zeros(()))

    def parameters(self, recurse=True):
        calls["parameters"] += 1
        return super().parameters(recurse)

    def named_parameters(self, *args, **kwargs):
        calls["named_parameters"] += 1
        return super().named_parameters(*args, **kwargs)

    def children(self):
        calls["children"] += 1
        return super().children()

    def named_children(self):
        calls["named_children"] += 1
        return super().named_children()

    def modules(self):
        calls["modules"] += 1
        return super().modules()

    def named_modules(self, *args, **kwargs):
        calls["named_modules"] += 1
        return super().named_modules(*args, **kwargs)

    def buffers(self, recurse=True):
        calls["buffers"] += 1
        return super().buffers(recurse)

    def forward(self, x):
        self.steps += 1
        return self.b(torch.relu(self.a(x)))


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("calls:", sorted(calls.items()))
