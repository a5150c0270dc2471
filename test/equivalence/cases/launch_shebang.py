#!/usr/bin/env python3
"""`./launch_shebang.py`: an executable script started through its `#!/usr/bin/env python3` line (python3 on PATH is
the interpreter under test). doctor must record its steps; the script prints sys.argv[0] and sys.executable's name.

# equivalence: command ./{script} --lr 0.05
# equivalence: stdio stdout=pipe stderr=pipe
"""
import os
import sys

import torch

print("argv", [os.path.basename(sys.argv[0])] + sys.argv[1:], "executable", os.path.basename(sys.executable))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=float(sys.argv[2]))
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
