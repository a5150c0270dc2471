"""torch.jit.script(model) after training, saved with torch.jit.save, loaded back and compared with the eager model.

TorchScript compiles the module's hooks along with it: a Python closure attached to the module cannot be compiled.
"""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU())
        self.head = torch.nn.Linear(16, 1)

    def forward(self, x):
        return self.head(self.body(x))


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
scripted = torch.jit.script(model)
torch.jit.save(scripted, "scripted.pt")
back = torch.jit.load("scripted.pt")
print("scripted matches eager:", torch.allclose(back(torch.ones(3, 8)), model(torch.ones(3, 8))))
print(scripted.code.strip().splitlines()[0])
