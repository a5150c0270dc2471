"""The user profiles the whole training with a torch.profiler schedule (wait 1, warmup 1, active 2, repeating to the
end) and prof.step() at each step, counting what each trace holds in on_trace_ready.

doctor's probe must not start a window of its own while the user's profiler runs, nor stop it.
"""
import torch
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
ready = []


def on_ready(p):
    ready.append([e.name for e in p.events()].count("aten::addmm"))


with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=on_ready) as prof:
    for epoch in range(8):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
print("loss %.6f" % loss.item())
print("traces ready:", len(ready), "addmm per trace:", ready)
