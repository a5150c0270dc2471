"""A child that writes to the inherited stdout: after training the script writes a 4 MB metrics file and shows it
with `cat` (subprocess.run without capture, so cat writes straight into the script's stdout, a pipe a slow reader
drains). Plainly cat waits for the reader and exits 0; under doctor cat failed with "Resource temporarily
unavailable" when the pipe had been made non-blocking (issue 43 item 1). The script's own last words go to
stderr: a print to the full pipe right after cat would meet it or not by timing under a non-blocking stdout.

# equivalence: stdio stdout=slow stderr=pipe
"""
import os
import subprocess
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
with open("metrics.txt", "w") as f:
    for step in range(64):
        x, y = data[step % 8]
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        f.write("step %d loss %.6f\n" % (step, loss.item()))
    f.write("".join("row %07d %s\n" % (i, "m" * 48) for i in range(65000)))
print("metrics file bytes", os.path.getsize("metrics.txt"), flush=True)
r = subprocess.run(["cat", "metrics.txt"])
sys.stderr.write("cat exit %d\n" % r.returncode)
os.remove("metrics.txt")
sys.stderr.write("done\n")
