"""The user profiles every other training step with a short torch.profiler.profile of its own (steps 2, 4, ... 60,
one step each, as a sampling profiler in the training loop does), so wherever doctor's probe puts its window (5
steps, from step 10 to 50) the user's profiler starts inside it.

Only one profiler can run on a thread: the user's must start and stop every time, as without doctor.
"""
import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
profiled = []
for step in range(1, 65):
    x, y = data[step % 8]
    prof = profile(activities=[ProfilerActivity.CPU]) if step % 2 == 0 and step <= 60 else None
    if prof is not None:
        prof.start()
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if prof is not None:
        prof.stop()
        profiled.append([e.name for e in prof.events()].count("aten::addmm"))
print("loss %.6f" % loss.item())
print("profiled steps:", len(profiled), "addmm per profile:", sorted(set(profiled)))
