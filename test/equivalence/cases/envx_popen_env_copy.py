"""Children given an explicit environment: `subprocess.run(..., env=dict(os.environ, RANK="0"))` before the first
step (the way launchers hand out ranks) and `env=os.environ.copy()` after training, each a Python child printing the
sorted names of its environment and its sys.path relative to the interpreter's prefix. The same under doctor.
"""
import os
import subprocess
import sys

import torch

CHILD = r"""
import os, sys
print("child", os.environ.get("RANK"), sorted(os.environ))
print("child sys.path", [p.replace(sys.prefix, "PREFIX") for p in sys.path if not p.startswith(os.getcwd())])
"""
r = subprocess.run([sys.executable, "-c", CHILD], env=dict(os.environ, RANK="0"), capture_output=True, text=True)
print(r.stdout, end="")
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
env = os.environ.copy()
env["RANK"] = "1"
r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True)
print(r.stdout, end="")
print("parent sees", sorted(os.environ))
