"""copy.copy and copy.deepcopy of the trained model; the copies' hook dictionaries and outputs are printed.

A deep copy carries every hook on the module, so a probe's hook would start firing on the copy as well.
"""
import copy

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
shallow = copy.copy(model)
deep = copy.deepcopy(model)
for name, m in (("model", model), ("copy", shallow), ("deepcopy", deep)):
    hooks = (len(m._forward_pre_hooks), len(m._forward_hooks), len(m._backward_hooks))
    print(name, "hooks", hooks, "out %.6f" % m(torch.ones(1, 8)).item())
