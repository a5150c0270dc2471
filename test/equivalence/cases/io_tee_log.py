"""`python train.py | tee train.log` on a terminal over SSH: stdout is a pipe into `tee`, whose own output a slow
reader drains; stderr is a pipe too. The script prints a line per step, a tqdm-like progress line redrawn with
carriage returns on stderr, a warning, and a 1.3 MB dump at the end; tee's file must hold every byte, as plainly
(issue 43 item 1: on the non-blocking pipe the dump raised BlockingIOError).

# equivalence: stdio stdout=tee stderr=pipe
"""
import sys
import warnings

import torch

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
    sys.stderr.write("\r%3d/64 [%-32s]" % (step + 1, "#" * ((step + 1) // 2)))
    sys.stderr.flush()
sys.stderr.write("\n")
warnings.warn("learning rate schedule not set, using constant lr")
sys.stdout.write("".join("weights %d %s\n" % (i, "%.6f " % model[0].weight.view(-1)[i % 128].item() * 12) for i in range(10000)))
print("end")
