"""A wrapper module that forwards unknown attributes to the model it wraps through `__getattr__` (as EMA, DDP-like and
PEFT wrappers do), logging each forwarded name; the model is trained through the wrapper without a DataLoader. The
log is printed at the end: the script's own reads only.
"""
import torch

forwarded = []


class Wrapper(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            forwarded.append(name)
            return getattr(self.inner, name)

    def forward(self, x):
        return self.inner(x)


class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 1)
        self.scale = 0.5

    def forward(self, x):
        return self.lin(x) * self.scale


torch.manual_seed(0)
model = Wrapper(Inner())
print("scale via wrapper:", model.scale)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
for step in range(60):
    i = (step % 8) * 8
    loss = torch.nn.functional.mse_loss(model(xs[i : i + 8]), ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
print("forwarded:", forwarded)
