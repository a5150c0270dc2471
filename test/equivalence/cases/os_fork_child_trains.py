"""os.fork() after training: the child trains 20 more steps, saves its own checkpoint and leaves with os._exit(0).

The parent waits for it, then saves its checkpoint. Both checkpoints and the child's status are compared.
"""
# equivalence: allow stderr-line ^.*DeprecationWarning: This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks in the child\.$ -- Python 3.12 warns with the pid, which differs from run to run (torch's own threads make the plain run warn too)
import os
import time

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randn(64, 1)
for step in range(40):
    loss = torch.nn.functional.mse_loss(model(x[step % 8 * 8:][:8]), y[step % 8 * 8:][:8])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("parent loss %.6f" % loss.item(), flush=True)
pid = os.fork()
if pid == 0:
    # The parent warns (Python 3.12) after fork() returns; a child that trains at once can write its own stderr first,
    # which orders the two processes' lines by chance, with or without doctor.
    time.sleep(0.5)
    for step in range(20):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), "child.pt")
    print("child loss %.6f" % loss.item(), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child status", os.waitstatus_to_exitcode(status))
torch.save(model.state_dict(), "parent.pt")
