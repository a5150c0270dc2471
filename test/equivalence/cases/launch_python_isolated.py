"""Isolated mode, `python3 -I train.py`: no PYTHON* variables, no user site, not even the script's folder on
sys.path (some clusters' wrappers run training so). The script reads sys.flags and sys.path and trains; doctor must
record its steps (issue 43 item 2: the probe, attached through PYTHONPATH, did not reach it) and the output must be
the same.

# equivalence: command {python} -I {script}
# equivalence: stdio stdout=pipe stderr=pipe
"""
import os
import sys

import torch

print("flags isolated=%d ignore_environment=%d safe_path=%s no_user_site=%d" % (sys.flags.isolated, sys.flags.ignore_environment, getattr(sys.flags, "safe_path", None), sys.flags.no_user_site))
print("sys.path", [p.replace(sys.prefix, "PREFIX").replace(os.getcwd(), "CWD") for p in sys.path])
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
