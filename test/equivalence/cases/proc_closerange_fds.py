"""After 30 steps the script closes every file descriptor from 3 up (as daemonizing code does), then trains 34
more steps and saves: whatever the probe had open is gone, and the training must go on as before.
"""
import os

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    if step == 30:
        os.closerange(3, 4096)
        print("closed descriptors 3..4095 at step", step)
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save(model.state_dict(), "model.pt")
print("loss %.6f" % loss.item())
