"""A long hand-written loop (300 steps, no optimizer, no DataLoader) marking its steps with gpuwise.step() behind a
guarded import, as docs/reference/doctor.md ("The probe") suggests; the weights are printed every 100 steps and saved.
"""
import torch

try:
    import gpuwise

    mark = gpuwise.step
except ImportError:
    mark = lambda: None  # noqa: E731

torch.manual_seed(0)
w = torch.zeros(8, 1, requires_grad=True)
x, y = torch.randn(256, 8), torch.randn(256, 1)
for step in range(300):
    i = step % 32 * 8
    loss = ((x[i : i + 8] @ w - y[i : i + 8]) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.05 * w.grad
        w.grad = None
    mark()
    if step % 100 == 99:
        print("step %d loss %.6f" % (step + 1, loss.item()))
torch.save(w.detach(), "w.pt")
