"""os.environ as the script sees it, every key with a digest of its value (no value printed), after training.

"""
import hashlib
import os

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
for k in sorted(os.environ):
    print(k, hashlib.sha256(os.environ[k].encode()).hexdigest()[:12])
for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    if p:
        print("PYTHONPATH entry:", p)
