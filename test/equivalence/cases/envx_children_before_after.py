"""Children started before the first step and after training print their whole environment, sorted: `sh -c
'env | sort'` and a Python child dumping os.environ. The script, its shell children and its Python children must
see exactly the environment they see without doctor (issue 43 item 3: doctor's PYTHONPATH and GPUWISE_* variables
reached them).
"""
import subprocess
import sys

import torch

DUMP = "import os\nfor k in sorted(os.environ):\n    print('%s=%s' % (k, os.environ[k]))"


def children(when):
    sh = subprocess.run(["sh", "-c", "env | LC_ALL=C sort"], capture_output=True, text=True)
    print("%s: sh sees %d variables" % (when, len(sh.stdout.splitlines())))
    for line in sh.stdout.splitlines():
        if not line.startswith(("_=", "SHLVL=", "PWD=", "OLDPWD=")):
            print("%s sh %s" % (when, line))
    py = subprocess.run([sys.executable, "-c", DUMP], capture_output=True, text=True)
    for line in py.stdout.splitlines():
        print("%s py %s" % (when, line))


children("before")
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
children("after")
