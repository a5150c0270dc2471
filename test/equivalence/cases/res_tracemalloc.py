"""tracemalloc started after `import torch` to find what holds memory in the training loop (a leak hunt): the files
whose allocations are still alive after training, grouped by file as the tracemalloc docs show.
"""
import os
import tracemalloc

import torch

tracemalloc.start()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
losses = []
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
snapshot = tracemalloc.take_snapshot()
files = sorted({os.path.basename(s.traceback[0].filename) for s in snapshot.statistics("filename")})
print("loss %.6f" % losses[-1])
print("files holding memory:", [f for f in files if not f.startswith("<")])
