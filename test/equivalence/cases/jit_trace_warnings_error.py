"""torch.jit.trace after training with TracerWarnings turned into errors (warnings.simplefilter("error", TracerWarning)).

Projects do this to be sure a trace is faithful; any int(tensor.shape[..]) read during the traced call raises.
"""
import warnings

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
with warnings.catch_warnings():
    warnings.simplefilter("error", torch.jit.TracerWarning)
    try:
        traced = torch.jit.trace(model, torch.randn(4, 8))
        print("trace clean:", traced(torch.ones(1, 8)).shape)
    except torch.jit.TracerWarning as w:
        print("trace warned:", str(w).splitlines()[0])
