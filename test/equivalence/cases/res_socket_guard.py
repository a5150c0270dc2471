"""Pending (named with a leading `_`, so the suite does not run it yet): the probe's socket is transport.py's, which
the socket's redesign (issue 43, item 5) owns; under doctor today the guard refuses the probe's socket at its first
record and the probe prints an internal error and switches itself off (no steps recorded). Rename it to
res_socket_guard.py once transport.py makes its socket from the class bound at the boot.

A pytest-socket-style guard: `socket.socket` replaced by a class that refuses to be made (tests that must not
touch the network), installed right after the imports; the training then runs and a blocked attempt is reported.
"""
import socket

import torch

blocked = []


class GuardedSocket(socket.socket):
    def __new__(cls, *args, **kwargs):
        blocked.append("socket")
        raise RuntimeError("network access is disabled in this run")


socket.socket = GuardedSocket
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("blocked attempts:", blocked)
