import os
import sys

import torch
from nets import mlp

print("nets from", os.path.relpath(mlp.__file__))
print("PYTHONPATH", os.environ.get("PYTHONPATH"))
print("sys.path here", [os.path.relpath(p) for p in sys.path if p.startswith(os.getcwd())])
torch.manual_seed(0)
model = mlp.build()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
