"""An evaluator thread calls the model (no_grad) every 16 steps while the main thread trains; the two hand over
through events, so every output is deterministic.
"""
import threading

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
val = torch.randn(16, 8)
go, done = threading.Event(), threading.Event()
results = []
stop = False


def evaluator():
    while True:
        go.wait()
        go.clear()
        if stop:
            return
        with torch.no_grad():
            results.append("%.6f" % model(val).mean().item())
        done.set()


t = threading.Thread(target=evaluator, name="evaluator")
t.start()
step = 0
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 16 == 0:
            go.set()
            done.wait()
            done.clear()
stop = True
go.set()
t.join()
print("loss %.6f" % loss.item())
print("evaluations:", results)
