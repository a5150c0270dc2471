"""An exception raised inside backward (a custom autograd Function whose backward fails at step 40): the traceback
through loss.backward() and the exit status are compared.
"""
import torch


class Clip(torch.autograd.Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, g):
        Clip.calls += 1
        if Clip.calls == 40:
            raise RuntimeError("gradient check failed in Clip.backward")
        return g


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(Clip.apply(model(x)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 16 == 0:
        print("step %d loss %.6f" % (step, loss.item()), flush=True)
