"""`python train.py | head -c 4096` with a script that does nothing about it: the reader closes the pipe after
4 KiB, the next print raises BrokenPipeError, the traceback goes to stderr, and the failed flush at exit makes the
status 120 (Python ignores SIGPIPE, so no signal death). The same under doctor. (The script prints 6 KB and waits
until poll() reports the reader gone, so that nothing depends on timing.)

# equivalence: stdio stdout=closing stderr=pipe
"""
import select
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
print("header " + "-" * 6000, flush=True)
poll = select.poll()
poll.register(sys.stdout.fileno(), select.POLLERR)
poll.poll(20000)
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step %3d loss %.6f" % (step, loss.item()))
print("end", flush=True)
