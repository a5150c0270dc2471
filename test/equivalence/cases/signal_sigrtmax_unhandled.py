"""The script sends itself SIGRTMAX without a handler after training: the default action ends the process
(status 128+SIGRTMAX). A handler installed behind the script's back would swallow it and let the process go on.
"""
import os
import signal
import sys
import time

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
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGRTMAX)
time.sleep(0.5)
print("still alive after SIGRTMAX")
