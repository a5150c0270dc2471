"""SIGINT (Ctrl-C) sent by the script to itself at step 30: the KeyboardInterrupt traceback, the exit by SIGINT.

Python reports an uncaught KeyboardInterrupt through sys.excepthook and then ends by the signal itself.
"""
import os
import signal

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
    if step == 30:
        print("loss %.6f, interrupting" % loss.item(), flush=True)
        os.kill(os.getpid(), signal.SIGINT)
print("not reached")
