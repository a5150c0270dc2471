"""The process's threads as the kernel lists them (/proc/self/task), and their names, before, during and after
training: scripts and monitoring agents count them (and some wait for the count to fall back).
"""
import os

import torch

torch.set_num_threads(1)


def tasks():
    names = []
    for tid in sorted(os.listdir("/proc/self/task"), key=int):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return len(names), sorted(set(names))


print("at start:", tasks())
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
seen = set()
step = 0
for epoch in range(10):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        seen.add(tasks()[0])
        if step == 30:
            print("at step 30:", tasks())
print("loss %.6f" % loss.item())
print("counts seen during training:", sorted(seen))
print("after training:", tasks())
