"""A SIGUSR1 handler that asks for a checkpoint (the SLURM pre-emption pattern); the script signals itself at step 20
and the loop saves state at the next step boundary.
"""
import os
import signal

import torch

requested = []
signal.signal(signal.SIGUSR1, lambda signum, frame: requested.append(signum))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
step = 0
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == 20:
            os.kill(os.getpid(), signal.SIGUSR1)
        if requested:
            requested.clear()
            torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, "preempt.pt")
            print("checkpoint at step", step)
print("loss %.6f" % loss.item())
