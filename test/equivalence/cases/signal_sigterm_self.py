"""After training and saving, the script is ended by its own SIGTERM (default action): the exit is by signal 15,
and the output written before it is all there.
"""
import os
import signal
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
torch.save(model.state_dict(), "model.pt")
print("loss %.6f" % loss.item())
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGTERM)
signal.pause()
