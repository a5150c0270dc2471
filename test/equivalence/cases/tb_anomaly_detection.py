"""torch.autograd.set_detect_anomaly(True) with a NaN produced in backward at step 30: anomaly mode's warning with the
forward call's traceback and the RuntimeError's traceback are compared.
"""
import torch

torch.autograd.set_detect_anomaly(True)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    out = model(x)
    if step == 30:
        out = out * torch.sqrt(torch.tensor(-1.0)) * 0 + out
    loss = torch.nn.functional.mse_loss(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("not reached")
