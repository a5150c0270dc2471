"""stdout and stderr are pipes slow readers drain (a CI runner's log collector): every step prints a progress line
with its metrics (flushed, as `print(..., flush=True)` in a training loop), the logging module reports to stderr,
and every 8 steps a long table of per-parameter norms goes to stdout and a long warning to stderr: 1.3 MB in small
writes at a training loop's pace, which the reader mostly keeps up with. Every line must arrive, in order, under
doctor too.

# equivalence: stdio stdout=slow stderr=slow
"""
import logging

import torch

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
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
    print("step %3d loss %.6f" % (step, loss.item()), flush=True)
    if step % 8 == 7:
        log.info("epoch %d done, loss %.6f", step // 8, loss.item())
        for i in range(2500):
            name, p = list(model.named_parameters())[i % 4]
            print("  %5d %-10s norm %.6f grad %.6f" % (i, name, p.norm().item(), p.grad.norm().item()))
        log.warning("table of epoch %d: %s", step // 8, "=" * 20000)
print("done", flush=True)
