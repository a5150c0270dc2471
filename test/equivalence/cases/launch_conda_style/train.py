import os
import sys

import torch

print("env", os.environ["CONDA_DEFAULT_ENV"], "prefix", os.path.relpath(os.environ["CONDA_PREFIX"]))
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
sys.stderr.write("a warning on the child's stderr\n")
sys.exit(3)
