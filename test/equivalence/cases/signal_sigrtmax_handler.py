"""The script installs its own SIGRTMAX handler after import torch and signals itself at step 30 (real-time signals
carry application events in some schedulers and RPC layers).

The disposition it finds before installing, and that its handler runs once, are printed.
"""
import os
import signal

import torch

print("SIGRTMAX disposition at start is the default:", signal.getsignal(signal.SIGRTMAX) == signal.SIG_DFL)
received = []
signal.signal(signal.SIGRTMAX, lambda signum, frame: received.append(signum))
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
    if step == 30:
        os.kill(os.getpid(), signal.SIGRTMAX)
print("loss %.6f" % loss.item())
print("handler ran:", len(received), "time(s)")
