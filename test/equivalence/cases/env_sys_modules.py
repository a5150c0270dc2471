"""The modules loaded after training, outside the standard library (torch's own submodules above all).

A probe's imports of torch parts the script never used change what is loaded (and what a lazily imported torch
part then does). The standard library's modules are not printed: a probe needs some (socket, json) to talk to
doctor, an allowed difference (docs/validation/equivalence.md).
# equivalence: allow stdout-line ^module _gpuwise_probe(\..*)?$ -- the probe package itself, under its private name
"""
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
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
stdlib = getattr(sys, "stdlib_module_names", frozenset())
for name in sorted(sys.modules):
    if name.split(".")[0] not in stdlib and name != "__main__":
        print("module", name)
