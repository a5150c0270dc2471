"""A short loop of 5 steps, then post-training code profiled by the user with torch.profiler, and a save.

Fine-tuning scripts and smoke tests run a handful of steps; nothing of doctor's may still be running afterwards.
"""
import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(5):
    loss = torch.nn.functional.mse_loss(model(torch.randn(8, 8)), torch.randn(8, 1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with torch.no_grad():
        out = model(torch.randn(4, 8))
print("post-training profile:", [e.name for e in prof.events()].count("aten::addmm"), "addmm")
torch.save(model.state_dict(), "model.pt")
