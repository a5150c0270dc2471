"""The user's own torch.profiler.profile (a with-block) over training steps 12 to 24, while doctor's probe may have
its window open or be about to open it; then training goes on to step 64.
"""
import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]


def train(steps):
    for i in range(steps):
        x, y = data[i % 8]
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss


train(12)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    train(12)
loss = train(40)
print("loss %.6f" % loss.item())
names = [e.name for e in prof.events()]
print("aten::addmm", names.count("aten::addmm"), "optimizer steps", sum(1 for n in names if n.startswith("Optimizer.step")))
