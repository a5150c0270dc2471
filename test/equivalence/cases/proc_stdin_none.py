"""A script that reads its stdin, which is /dev/null: read() gives '', input() raises EOFError; then it trains.
"""
import sys

import torch

print("stdin is a tty:", sys.stdin.isatty())
print("read:", repr(sys.stdin.read()))
try:
    answer = input("continue? ")
except EOFError:
    answer = "EOF"
print("\nanswer:", answer)
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
