"""Batches as a dict subclass that records which fields the loop read (to warn about unused columns, as some data
libraries do): every `__getitem__`, `get`, `values`, `items`, `keys` and iteration is logged. The loop reads only
"x" and "y"; the fields reported unread ("meta") and the read log are printed at the end.
"""
import collections

import torch

log = collections.Counter()


class TrackedBatch(dict):
    def __getitem__(self, key):
        log["getitem:%s" % key] += 1
        return super().__getitem__(key)

    def get(self, key, default=None):
        log["get:%s" % key] += 1
        return super().get(key, default)

    def values(self):
        log["values"] += 1
        return super().values()

    def items(self):
        log["items"] += 1
        return super().items()

    def keys(self):
        log["keys"] += 1
        return super().keys()

    def __iter__(self):
        log["iter"] += 1
        return super().__iter__()


def collate(samples):
    xs, ys = zip(*samples)
    return TrackedBatch(x=torch.stack(xs), y=torch.stack(ys), meta=torch.arange(len(xs)))


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, collate_fn=collate)
for epoch in range(8):
    for batch in loader:
        loss = torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("read log:", sorted(log.items()))
