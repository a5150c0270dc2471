"""TorchScript export at the end of training: script, eval, torch.jit.freeze, save, load, compare.

The deployment path of many projects; the frozen archive's bytes are compared.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True, drop_last=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
model.eval()
frozen = torch.jit.freeze(torch.jit.script(model))
torch.jit.save(frozen, "frozen.pt")
back = torch.jit.load("frozen.pt")
with torch.no_grad():
    print("frozen matches:", torch.allclose(back(torch.ones(3, 8)), model(torch.ones(3, 8)), atol=1e-6))
