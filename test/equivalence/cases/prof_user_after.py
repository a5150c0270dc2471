"""After 64 training steps, the user profiles inference with torch.profiler.profile and then with
torch.autograd.profiler.profile (the legacy API), and prints what each recorded.

The probe's window must be closed by then, whatever the training looked like.
"""
import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
model.eval()
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(8, 8))
print("torch.profiler addmm:", [e.name for e in prof.events()].count("aten::addmm"))
with torch.autograd.profiler.profile() as legacy:
    with torch.no_grad():
        model(torch.randn(8, 8))
print("autograd.profiler addmm:", [e.name for e in legacy.function_events].count("aten::addmm"))
