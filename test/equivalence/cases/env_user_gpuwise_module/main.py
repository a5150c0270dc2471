"""A project's own gpuwise.py next to the script: `import gpuwise` must give the user's module, and its own
`gpuwise.step(loss)` (not doctor's) is called at every step.
"""
import gpuwise
import torch

print("gpuwise is the project's:", gpuwise.pick_device(), gpuwise.__file__.rsplit("/", 1)[-1])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    gpuwise.step(loss.item())
print("loss %.6f" % loss.item())
print("gpuwise.step calls:", len(gpuwise.calls), "last", gpuwise.calls[-1])
