"""Training runs in a worker thread while the main thread evaluates the model: once before training starts (so the
main thread makes the model's first call), then after every epoch, handing over through events.
"""
import threading

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
val = torch.randn(16, 8)
epoch_done, may_go_on = threading.Event(), threading.Event()
losses = []


def trainer():
    for epoch in range(8):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append("%.6f" % loss.item())
        epoch_done.set()
        may_go_on.wait()
        may_go_on.clear()


with torch.no_grad():
    print("before training: %.6f" % model(val).mean().item())
t = threading.Thread(target=trainer, name="trainer")
t.start()
for epoch in range(8):
    epoch_done.wait()
    epoch_done.clear()
    with torch.no_grad():
        print("epoch %d loss %s val %.6f" % (epoch, losses[-1], model(val).mean().item()))
    may_go_on.set()
t.join()
