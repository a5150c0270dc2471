"""`python train.py >&-`: the script starts with descriptor 1 closed (a daemon's launcher, a cron job). Python then
has sys.stdout None and print() writes nothing; os.fstat(1) fails with EBADF; the first descriptor the script opens
is 1; a shell child's echo fails "Bad file descriptor". The same under doctor: no descriptor may appear at 1 (issue
43 item 5: the probe's socket took fd 1 and later prints landed in the run directory).

# equivalence: stdio stdout=closed stderr=pipe
"""
import errno
import os
import subprocess
import sys

import torch


def fd1(when):
    try:
        os.fstat(1)
        state = "open"
    except OSError as e:
        state = errno.errorcode[e.errno]
    sys.stderr.write("%s: sys.stdout is None: %s, fd 1 %s\n" % (when, sys.stdout is None, state))


fd1("start")
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
    print("step", step)
fd1("after training")
r = subprocess.run(["sh", "-c", "echo from the shell; echo shell status $? >&2"])
sys.stderr.write("shell exit %d\n" % r.returncode)
with open("log.txt", "w") as f:
    sys.stderr.write("the log file got fd %d\n" % f.fileno())
    f.write("loss %.6f\n" % loss.item())
sys.stderr.write("loss %.6f\n" % loss.item())
