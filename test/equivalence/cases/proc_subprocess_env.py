"""subprocess.run([sys.executable, ...]) after training: the child prints the environment keys of interest, its
PYTHONPATH and sys.path entries that name gpuwise, then trains 20 steps itself and prints what of the probe it can
see (threads, excepthook, the backward function).

The child is an unrelated process of the script's: it must not carry a probe of its own.
"""
import subprocess
import sys

import torch

CHILD = r"""
import os, sys, threading
for k in sorted(os.environ):
    if k.startswith(("PYTHON", "GPUWISE_", "TORCH", "OMP_", "CUDA", "LD_PRELOAD")):
        print("child env", k)
for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    if p:
        print("child PYTHONPATH entry:", p)
for p in sys.path:
    if "gpuwise" in p:
        print("child sys.path entry:", p)
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(20):
    loss = model(torch.ones(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("child loss %.6f" % loss.item())
print("child threads", sorted(t.name for t in threading.enumerate()))
print("child excepthook default", sys.excepthook is sys.__excepthook__)
print("child backward", torch.autograd.backward.__module__, torch.autograd.backward.__qualname__)
print("child modules", sorted(m for m in sys.modules if "gpuwise" in m))
"""

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
r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
sys.stdout.write(r.stdout)
sys.stdout.write("child stderr: %r\nchild exit %d\n" % (r.stderr, r.returncode))
