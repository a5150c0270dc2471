"""An exception raised in a worker thread during training, reported by threading's default excepthook on stderr,
while the main thread finishes the training and exits normally.
"""
import threading

import torch


def background_check(step):
    raise ValueError("bad batch statistics at step %d" % step)


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
    if step == 20:
        t = threading.Thread(target=background_check, args=(step,), name="checker")
        t.start()
        t.join()
print("loss %.6f" % loss.item())
print("threading.excepthook is the default:", threading.excepthook is threading.__excepthook__)
