"""The script edits os.environ after training (sets PYTHONPATH to its own folder, sets a flag, deletes a variable
it inherited) and starts a Python helper that prints its sorted environment and what of it matters: the helper must
see exactly what the script set, no more (issue 43 item 3: GPUWISE_PROBED_PARENT, GPUWISE_RUN_DIR and
GPUWISE_SOCKET reached it).
"""
import os
import subprocess
import sys

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
print("loss %.6f" % loss.item(), flush=True)
os.makedirs("libs", exist_ok=True)
with open("libs/helperlib.py", "w") as f:
    f.write("VALUE = 42\n")
os.environ["PYTHONPATH"] = "libs"
os.environ["TRAIN_DONE"] = "1"
os.environ.pop("PYTHONHASHSEED", None)
child = r"""
import os, sys
import helperlib
print("helper: helperlib", helperlib.VALUE)
print("helper: sys.path[1]", os.path.relpath(sys.path[1]))
for k in sorted(os.environ):
    print("helper env %s=%s" % (k, os.environ[k]))
"""
r = subprocess.run([sys.executable, "-c", child])
print("helper exit", r.returncode)
