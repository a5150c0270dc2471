"""os._exit(5) after training: no atexit handler runs and unflushed output is lost, in both runs alike.
"""
import atexit
import os
import sys

import torch

atexit.register(lambda: print("atexit ran (never printed)"))
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
torch.save(model.state_dict(), "model.pt")
print("loss %.6f" % loss.item())
sys.stdout.flush()
print("this line stays in the buffer")
os._exit(5)
