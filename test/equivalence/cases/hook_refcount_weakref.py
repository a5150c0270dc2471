"""References to the script's objects after training: sys.getrefcount of the model, the optimizer and a batch, and
weakref.finalize callbacks that must run as soon as the script drops its last reference (nothing else may keep
the model, its optimizer or its batches alive).
"""
import gc
import sys
import weakref

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("refcounts: model %d optimizer %d batch %d" % (sys.getrefcount(model), sys.getrefcount(opt), sys.getrefcount(x)))
gone = []
weakref.finalize(model, gone.append, "model")
weakref.finalize(opt, gone.append, "optimizer")
weakref.finalize(x, gone.append, "batch")
del model, opt, x, y, loss
print("freed without a collection:", sorted(gone))
gc.collect()
print("freed after gc.collect():", sorted(gone))
