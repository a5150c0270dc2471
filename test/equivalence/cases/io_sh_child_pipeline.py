"""Shell children writing to the inherited streams: a `sh -c` pipeline (`yes | head`) writes 1.2 MB into the
script's stdout and a loop of `echo ... >&2` into its stderr, both pipes slow readers drain, between training
epochs. Plainly the shell waits for the readers; every line must arrive and every exit status be 0 under doctor too
(issue 43 item 1: head failed with "Resource temporarily unavailable" on a non-blocking pipe). The script reports
on stderr only: its own print to the full stdout right after a shell would meet the pipe full or not by timing.

# equivalence: stdio stdout=slow stderr=slow
"""
import subprocess
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for epoch in range(4):
    for step in range(16):
        x, y = data[step % 8]
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    sys.stderr.write("epoch %d loss %.6f\n" % (epoch, loss.item()))
    sys.stderr.flush()
    r = subprocess.run(
        ["sh", "-c", 'yes "epoch %d sample line from the shell" | head -n 10000; i=0; while [ $i -lt 200 ]; do echo "warn $i" >&2; i=$((i+1)); done' % epoch]
    )
    sys.stderr.write("shell exit %d\n" % r.returncode)
    sys.stderr.flush()
sys.stderr.write("done\n")
