"""A loop of 14 steps, each dominated by a 15 ms wait (reading from slow storage), so step times are steady and
doctor's probe opens its window at step 11 and is still in it when the loop ends; then an evaluation the user
profiles with torch.profiler and a second one with torch.autograd.profiler.

A window that stays open past the loop would meet the user's profiler.
"""
import time

import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(112, 8), torch.randn(112, 1))
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    time.sleep(0.015)
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
try:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with torch.no_grad():
            model(torch.randn(4, 8))
    print("torch.profiler: addmm", [e.name for e in prof.events()].count("aten::addmm"))
except RuntimeError as e:
    print("torch.profiler failed:", e)
try:
    with torch.autograd.profiler.profile() as legacy:
        with torch.no_grad():
            model(torch.randn(4, 8))
    print("autograd.profiler: addmm", [e.name for e in legacy.function_events].count("aten::addmm"))
except RuntimeError as e:
    print("autograd.profiler failed:", e)
