"""`python train.py 2>&-`: descriptor 2 closed. sys.stderr is None, so warnings and logging's last-resort handler
write nothing and traceback.print_exc() falls back to print() on stdout; os.fstat(2) fails with EBADF. The same
under doctor (which must not hand the script a /dev/null in its place).

# equivalence: stdio stdout=pipe stderr=closed
"""
import errno
import logging
import os
import traceback
import warnings

import torch

try:
    os.fstat(2)
    print("fd 2 open")
except OSError as e:
    print("fd 2", errno.errorcode[e.errno])
print("sys.stderr is None:", __import__("sys").stderr is None)
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
warnings.warn("a warning with nowhere to go")
logging.warning("a log record with nowhere to go")
try:
    model(torch.ones(3, 5))
except RuntimeError:
    traceback.print_exc()
print("loss %.6f" % loss.item())
