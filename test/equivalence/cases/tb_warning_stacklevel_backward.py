"""A warning raised with `stacklevel` from inside backward (a gradient hook that warns about large gradients and
points at its caller, as libraries do): the location Python prints depends on the frames above the hook.
"""
import warnings

import torch

warnings.simplefilter("always")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)


def check(g):
    for level in (2, 3, 4):
        warnings.warn("gradient norm %.1f (stacklevel %d)" % (float(g.norm()) // 1, level), UserWarning, stacklevel=level)
    return g


for step in range(40):
    i = (step % 8) * 8
    out = model(xs[i : i + 8])
    if step in (0, 12, 33):
        out.register_hook(check)
    loss = torch.nn.functional.mse_loss(out, ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
