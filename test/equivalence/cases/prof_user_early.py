"""The user's own torch.profiler.profile over training steps 2 to 56, started before doctor's probe would open its
window (step 10 at the earliest) and stopped after it must have (step 50 at the latest).

Only one profiler can run on a thread: the user's must start, stay and stop as without doctor, and the probe must
neither fail nor stop it.
"""
import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
prof = profile(activities=[ProfilerActivity.CPU])
step = 0
for epoch in range(8):
    for x, y in loader:
        step += 1
        if step == 2:
            prof.start()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 56:
            prof.stop()
print("loss %.6f" % loss.item())
names = [e.name for e in prof.events()]
print("aten::addmm", names.count("aten::addmm"), "aten::mse_loss", names.count("aten::mse_loss"))
print("ProfilerStep spans:", sorted({n for n in names if n.startswith("ProfilerStep")}))
