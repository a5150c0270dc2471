"""`python train.py | head -c 4096`: the reader takes 4 KiB and closes the pipe while the script still prints. The
script handles the broken pipe as Python's documentation recommends (catch BrokenPipeError, point stdout at
/dev/null, report on stderr), checks what a shell child meets on the closed pipe (killed by SIGPIPE), and saves its
model: exit 0, the same 4 KiB, stderr and checkpoint under doctor. (So that the moment the reader closes does not
depend on timing, the script prints 6 KB first and waits until poll() reports the pipe's reader gone.)

# equivalence: stdio stdout=closing stderr=pipe
"""
import os
import select
import subprocess
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
print("header " + "-" * 6000, flush=True)
poll = select.poll()
poll.register(sys.stdout.fileno(), select.POLLERR)
sys.stderr.write("reader gone: %s\n" % bool(poll.poll(20000)))
broken_at = None
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if broken_at is None:
        try:
            print("step %3d loss %.6f" % (step, loss.item()), flush=True)
        except BrokenPipeError:
            broken_at = step
            r = subprocess.run(["sh", "-c", "echo from the shell; echo never"])
            sys.stderr.write("shell on the closed pipe: %d\n" % r.returncode)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
print("never read")
torch.save(model.state_dict(), "model.pt")
sys.stderr.write("stdout closed by the reader at step %s\n" % broken_at)
