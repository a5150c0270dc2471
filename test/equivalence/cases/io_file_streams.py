"""`python train.py >out.log 2>err.log`: stdout and stderr are regular files the script inherits. It reads its own
offsets and flags (the position equals the bytes it wrote, no O_APPEND), a shell child appends to both, and after
training the script seeks stdout back and rewrites its first line (a "status: done" header), as some trainers do.

# equivalence: stdio stdout=file stderr=file
"""
import fcntl
import os
import subprocess
import sys

import torch

print("status: running")
sys.stdout.flush()
print("flags: append=%s nonblock=%s" % (bool(fcntl.fcntl(1, fcntl.F_GETFL) & os.O_APPEND), bool(fcntl.fcntl(1, fcntl.F_GETFL) & os.O_NONBLOCK)))
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
    print("step %d loss %.6f" % (step, loss.item()))
sys.stdout.flush()
print("offset after training:", os.lseek(1, 0, os.SEEK_CUR), "size:", os.fstat(1).st_size, flush=True)
subprocess.run(["sh", "-c", "echo from the shell; echo shell warning >&2"])
sys.stderr.write("stderr offset %d\n" % os.lseek(2, 0, os.SEEK_CUR))
sys.stderr.flush()
end = os.lseek(1, 0, os.SEEK_CUR)
os.lseek(1, 0, os.SEEK_SET)
os.write(1, b"status: done   ")
os.lseek(1, end, os.SEEK_SET)
print("end at", end)
