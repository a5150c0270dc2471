"""Children forked from the training loop (an evaluation or a checkpoint writer that profiles itself) at every other
step from 10 to 40: each runs its own `torch.autograd.profiler.profile()` around a little work and exits with 0 when
that worked, 3 when torch refused; the parent prints the exit statuses.
# equivalence: allow stderr-line DeprecationWarning: This process \(pid=\d+\) is multi-threaded -- Python 3.12 warns at a fork in a process with threads (torch's), naming the pid, which differs between plain runs too
"""
import os

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
statuses = []
for step in range(48):
    i = (step % 8) * 8
    loss = torch.nn.functional.mse_loss(model(xs[i : i + 8]), ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if 10 <= step <= 40 and step % 2 == 0:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                with torch.autograd.profiler.profile() as prof:
                    torch.ones(4).sum()
            except RuntimeError:
                code = 3
            os._exit(code)
        statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print("loss %.6f" % loss.item())
print("children:", statuses)
