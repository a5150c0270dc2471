"""The interpreter's hooks after training: sys.excepthook, threading.excepthook, sys.unraisablehook, sys.displayhook,
sys.breakpointhook, the profile and trace functions, and the number of atexit callbacks.

Libraries chain sys.excepthook (rich, IPython, wandb) and count on finding the default.
"""
import atexit
import sys
import threading

import torch

atexit.register(lambda: print("user atexit ran"))
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
print("sys.excepthook default:", sys.excepthook is sys.__excepthook__)
print("threading.excepthook default:", threading.excepthook is threading.__excepthook__)
print("unraisablehook default:", sys.unraisablehook is sys.__unraisablehook__)
print("displayhook default:", sys.displayhook is sys.__displayhook__)
print("breakpointhook default:", sys.breakpointhook is sys.__breakpointhook__)
print("trace:", sys.gettrace(), "profile:", sys.getprofile())
print("atexit callbacks:", atexit._ncallbacks())
