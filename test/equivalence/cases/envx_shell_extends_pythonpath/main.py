"""A project whose data preparation and evaluation run through shell scripts: before training main.py runs `sh
tools/prepare.sh`, after training `sh tools/evaluate.sh`; each does `PYTHONPATH=$PYTHONPATH:extra python3
tools/X.py`, and the helper (plain Python, no torch) imports `metrics` from extra/. Plainly both imports work; under
doctor the grandchildren's PYTHONPATH must keep the addition (issue 43 item 3: it was reset to the user's original
and the helper failed with ModuleNotFoundError).
"""
import json
import subprocess

import torch

r = subprocess.run(["sh", "tools/prepare.sh"])
print("prepare.sh exit", r.returncode, flush=True)
data = [(torch.tensor(x), torch.tensor(y)) for x, y in json.load(open("data.json"))]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item(), flush=True)
torch.save(model.state_dict(), "model.pt")
with open("weights.json", "w") as f:
    json.dump({k: v.tolist() for k, v in model.state_dict().items()}, f)
r = subprocess.run(["sh", "tools/evaluate.sh"])
print("evaluate.sh exit", r.returncode)
