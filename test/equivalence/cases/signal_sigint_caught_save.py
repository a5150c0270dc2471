"""Ctrl-C handled by the script: KeyboardInterrupt caught around the loop, a checkpoint saved, exit status 0.
"""
import os
import signal

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
step = 0
try:
    for epoch in range(8):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step == 40:
                os.kill(os.getpid(), signal.SIGINT)
except KeyboardInterrupt:
    print("interrupted after step", step)
    torch.save({"step": step, "model": model.state_dict()}, "interrupted.pt")
print("loss %.6f" % loss.item())
