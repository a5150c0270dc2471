"""`import gpuwise` in the user's code with no gpuwise installed (the guarded import scripts use), after training.

Plainly it raises ImportError; where gpuwise is pip-installed both runs import it.
"""
import importlib.util

import torch

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
print("loss %.6f" % loss.item())
print("find_spec('gpuwise') found:", importlib.util.find_spec("gpuwise") is not None)
try:
    import gpuwise

    print("import gpuwise: ok, has step():", hasattr(gpuwise, "step"))
except ImportError as e:
    print("import gpuwise: ImportError:", e)
