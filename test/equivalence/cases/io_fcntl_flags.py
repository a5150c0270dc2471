"""What the script's descriptors 0-2 are, read with fcntl and fstat before the first step and after training:
access mode, O_NONBLOCK, O_APPEND, close-on-exec, the file type, os.get_blocking, isatty, and what sys.stdout and
sys.stderr are (encoding, buffering). stdout and stderr are pipes, stdin /dev/null; under doctor they must be the
same (issue 43 item 1: O_NONBLOCK appeared on the pipes).

# equivalence: stdio stdout=pipe stderr=pipe
"""
import fcntl
import os
import stat
import sys

import torch


def describe(when):
    for fd in (0, 1, 2):
        st = os.fstat(fd)
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        kind = "fifo" if stat.S_ISFIFO(st.st_mode) else "chr" if stat.S_ISCHR(st.st_mode) else "reg" if stat.S_ISREG(st.st_mode) else "other"
        print(
            "%s fd %d: %s acc=%d nonblock=%s append=%s cloexec=%s blocking=%s isatty=%s"
            % (when, fd, kind, fl & os.O_ACCMODE, bool(fl & os.O_NONBLOCK), bool(fl & os.O_APPEND), bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC), os.get_blocking(fd), os.isatty(fd))
        )
    for name in ("stdout", "stderr"):
        s = getattr(sys, name)
        print("%s sys.%s: %s %s line_buffering=%s errors=%s" % (when, name, s.encoding, type(s.buffer).__name__, s.line_buffering, s.errors))
    st1, st2 = os.fstat(1), os.fstat(2)
    print("%s stdout and stderr the same pipe: %s" % (when, (st1.st_dev, st1.st_ino) == (st2.st_dev, st2.st_ino)))


describe("before")
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
    if step == 0:
        describe("step0")
print("loss %.6f" % loss.item())
describe("after")
