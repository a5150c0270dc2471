"""The script trains, then replaces itself with os.execv (a trainer that re-executes itself for the next stage):
the new program prints its sorted environment and sys.path, and its exit status is the process's. What the exec'd
program sees must be what it sees without doctor.
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
print("loss %.6f" % loss.item(), flush=True)
torch.save(model.state_dict(), "stage1.pt")
NEXT = r"""
import os, sys
print("stage 2 env", sorted(os.environ))
print("stage 2 sys.path", [p.replace(sys.prefix, "PREFIX") for p in sys.path])
print("stage 2 modules with gpuwise:", sorted(m for m in sys.modules if "gpuwise" in m))
sys.exit(7)
"""
os.execv(sys.executable, [sys.executable, "-c", NEXT])
