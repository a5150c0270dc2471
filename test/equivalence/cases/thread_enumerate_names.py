"""threading.enumerate() inspected during and after training: thread names, daemon flags and the count.

Scripts and frameworks list threads to find stragglers at exit (and some wait for every non-main thread).
"""
import threading

import torch


def threads():
    return sorted((t.name, t.daemon) for t in threading.enumerate())


print("at start:", threads())
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
step = 0
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == 30:
            print("at step 30:", threads())
print("loss %.6f" % loss.item())
print("after training:", threads(), threading.active_count())
for t in threading.enumerate():
    if t is not threading.main_thread() and not t.daemon:
        t.join()
print("joined every non-daemon thread")
