"""An exponential moving average of the weights, kept in a deepcopy of the model updated after every step.

The EMA copy is evaluated, saved whole with torch.save, and reloaded (timm and YOLO do this).
"""
import copy

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
model(torch.zeros(1, 8))  # a first forward before the copy, as a warm-up or a shape check does
ema = copy.deepcopy(model).eval()
for p in ema.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.9).add_(pm, alpha=0.1)
    with torch.no_grad():
        print("epoch %d loss %.6f ema %.6f" % (epoch, loss.item(), ema(torch.ones(1, 8)).item()))
torch.save(ema, "ema.pt")
torch.save(ema.state_dict(), "ema_state.pt")
print("ema reloaded", type(torch.load("ema.pt")).__name__)
