"""DataLoader with 2 worker processes whose dataset calls an nn.Module (an augmentation) in __getitem__; each sample
also reports what the worker sees of itself: the augmentation module's hooks, the worker's thread names and its
sys.excepthook.

Workers are forked from the training process; they must not become training processes of their own.
"""
import sys
import threading

import torch


class Augmented(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(64, 8, generator=g)
        self.y = torch.randn(64, 1, generator=g)
        self.augment = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh())

    def __len__(self):
        return 64

    def __getitem__(self, i):
        with torch.no_grad():
            x = self.augment(self.x[i : i + 1])[0]
        seen = "hooks=%d threads=%s excepthook=%s" % (
            len(self.augment._forward_pre_hooks) + len(self.augment._forward_hooks),
            ",".join(sorted(t.name for t in threading.enumerate())),
            "default" if sys.excepthook is sys.__excepthook__ else "replaced",
        )
        return x, self.y[i], seen


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = torch.utils.data.DataLoader(Augmented(), batch_size=8, num_workers=2)
seen = set()
for epoch in range(8):
    for x, y, info in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen.update(info)
print("loss %.6f" % loss.item())
for s in sorted(seen):
    print("worker saw:", s)
