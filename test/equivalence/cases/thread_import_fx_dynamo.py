"""A thread imports torch.fx, torch._dynamo and torch._inductor (where they exist) and other lazily imported parts of
torch while the main thread trains through the steps where doctor's probe opens its window.

Two threads importing the same packages must not deadlock on the import locks.
"""
import importlib
import threading

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
outcome = {}


def importer():
    for name in ("torch.fx", "torch._dynamo", "torch._inductor", "torch.utils.benchmark", "torch.testing", "torch.distributed.algorithms"):
        try:
            importlib.import_module(name)
            outcome[name] = "imported"
        except ImportError:
            outcome[name] = "absent"


step = 0
thread = None
for epoch in range(8):
    for x, y in loader:
        step += 1
        if step == 9:
            thread = threading.Thread(target=importer, name="importer")
            thread.start()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
thread.join(timeout=120)
print("loss %.6f" % loss.item())
print("importer alive:", thread.is_alive())
for name in sorted(outcome):
    print(name, outcome[name])
