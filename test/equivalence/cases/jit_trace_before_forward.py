"""torch.jit.trace of a freshly built model, before any forward call; the eager model then trains and is traced again.

Tracing runs the module once and checks a second run against the graph; anything that first hooks into the
module during that run changes what is traced.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
example = torch.randn(4, 8)
traced = torch.jit.trace(model, example)
print("traced before training:", torch.allclose(traced(example), model(example)))
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
print("old trace follows the weights:", torch.allclose(traced(example), model(example)))
torch.jit.save(torch.jit.trace(model, example), "traced.pt")
