import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
print("module", __spec__.name, "PYTHONPATH", os.path.relpath(os.environ["PYTHONPATH"]))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for epoch in range(args.epochs):
    for step in range(32):
        x, y = data[step % 8]
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch %d loss %.6f" % (epoch, loss.item()))
