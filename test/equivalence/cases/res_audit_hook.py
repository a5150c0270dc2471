"""An audit hook (sys.addaudithook, as sandboxes and security agents install) that records the events the process
raises after `import torch`: process creation, native libraries loaded, sockets, files opened outside the working
directory, frames and objects inspected. The names of the events seen, with the kinds of path opened, are printed.
"""
import collections
import os
import sys

import torch

seen = collections.Counter()
cwd = os.getcwd()


def hook(event, args):
    if event == "open":
        path = str(args[0]) if args and args[0] is not None else ""
        where = "cwd" if path.startswith(cwd) or not path.startswith("/") else path.split("/")[1]
        seen["open:" + where] += 0  # which places, not how often (Python's own caches vary)
    elif event in ("import", "compile", "exec", "marshal.loads", "os.listdir", "os.scandir") or event.startswith("sys.settrace"):
        return
    else:
        seen[event] += 0


sys.addaudithook(hook)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(10):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("events:", sorted(seen))
