"""The process's scheduling and limits as the script sees them: CPU affinity, nice value, resource limits, umask,
process group leadership, the terminal, and torch's thread counts, before and after training.

doctor must not renice, pin or limit the command (its own analysis may run at low priority, the command not).
"""
import os
import resource

import torch


def facts():
    limits = {n: resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_STACK", "RLIMIT_AS", "RLIMIT_NPROC")}
    umask = os.umask(0o022)
    os.umask(umask)
    return "cpus=%d nice=%d umask=%o limits=%s group-leader=%s" % (len(os.sched_getaffinity(0)), os.nice(0), umask, limits, os.getpgrp() == os.getpid())


print("before:", facts())
print("threads:", torch.get_num_threads(), torch.get_num_interop_threads())
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
print("loss %.6f" % loss.item())
print("after:", facts())
print("threads:", torch.get_num_threads(), torch.get_num_interop_threads())
