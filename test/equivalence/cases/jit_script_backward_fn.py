"""torch.jit.script of a training-step function that calls torch.autograd.backward, after some eager training.

TorchScript resolves torch.autograd.backward to its builtin; a Python wrapper put in its place cannot be compiled.
"""
from typing import List

import torch

torch.manual_seed(0)
w = torch.randn(8, 1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
x, y = torch.randn(64, 8), torch.randn(64, 1)
for step in range(30):
    loss = ((x @ w - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("eager loss %.6f" % loss.item())


def grad_step(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    loss = ((x @ w - y) ** 2).mean()
    tensors: List[torch.Tensor] = [loss]
    torch.autograd.backward(tensors)
    return loss


scripted = torch.jit.script(grad_step)
for step in range(30):
    opt.zero_grad()
    loss = scripted(x, y, w)
    opt.step()
print("scripted loss %.6f" % loss.item())
