"""A rolling `last.pt` (torch.save of the whole model) overwritten at the end of every epoch.

Under a probe that breaks pickling, the first save already fails after opening the file: the previous
epoch's checkpoint is replaced by a truncated stub, data lost. Both the file and the printed reload are compared.
"""
import os

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    try:
        torch.save(model, "last.pt")
        print("epoch %d saved last.pt (%d bytes) loss %.6f" % (epoch, os.path.getsize("last.pt"), loss.item()))
    except Exception as e:
        print("epoch %d save failed: %s" % (epoch, type(e).__name__))
back = torch.load("last.pt")
print("last.pt reloads:", type(back).__name__)
