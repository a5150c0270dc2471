"""The Python stack seen from inside backward: a custom autograd Function's backward and a tensor hook log
`traceback.extract_stack()` (as debugging code and anomaly tools do) at steps 0, 1 and 30, in a loop without a
DataLoader, and with one.
"""
import os
import traceback

import torch

stacks = []


def where(tag):
    frames = traceback.extract_stack()[:-1]
    stacks.append("%s: %s" % (tag, " > ".join("%s:%s" % (os.path.basename(f.filename), f.name) for f in frames)))


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        if Scale.log:
            where("Function.backward")
        return g * 2


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
for step in range(40):
    i = (step % 8) * 8
    Scale.log = step in (0, 1, 30)
    out = Scale.apply(model(xs[i : i + 8]))
    if Scale.log:
        out.register_hook(lambda g: where("tensor hook") or g)
    loss = torch.nn.functional.mse_loss(out, ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, ys), batch_size=8)
for step, (x, y) in enumerate(loader):
    Scale.log = step in (0, 1)
    loss = torch.nn.functional.mse_loss(Scale.apply(model(x)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
print("\n".join(stacks))
