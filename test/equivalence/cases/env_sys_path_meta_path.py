"""sys.path (the script's folder shown as <here>), sys.meta_path's finders, sys.path_hooks, and the sitecustomize
module's public names, after training.

"""
import os
import sys

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
print("loss %.6f" % loss.item())
here = os.path.dirname(os.path.abspath(__file__))
for p in sys.path:
    print("sys.path", "<here>" if p == here else p)
print("meta_path:", [type(f).__name__ if not isinstance(f, type) else f.__name__ for f in sys.meta_path])
print("path_hooks:", [getattr(h, "__name__", type(h).__name__) for h in sys.path_hooks])
site = sys.modules.get("sitecustomize")
print("sitecustomize names:", None if site is None else sorted(n for n in vars(site) if not n.startswith("_")))
