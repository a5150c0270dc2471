"""`timeout 120 python3 train.py` (a CI job's guard), the training in a background-free child of coreutils'
timeout, which puts itself in its own process group unless --foreground: doctor must record the steps and the exit
status (here the script's 4) must come through the same.

# equivalence: command timeout 120 python3 {script}
# equivalence: stdio stdout=pipe stderr=pipe
"""
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
sys.exit(4)
