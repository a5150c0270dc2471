"""What the script sees of torch's functions after training: module, qualified name, source file name and signature
of the functions a probe may wrap (autograd.backward, Tensor.backward, Optimizer.__init__, SGD/Adam.step, the
DataLoader iterator's __next__, Module.__call__, CUDAGraph.replay).

Libraries inspect signatures and source files (TorchScript resolves builtins by identity); once the steps are
seen nothing may stay wrapped.
"""
import inspect
import os

import torch
import torch.utils.data.dataloader as dl


def describe(fn):
    code = getattr(fn, "__code__", None)
    try:
        sig = str(inspect.signature(fn))
    except (TypeError, ValueError):
        sig = "?"
    src = os.path.basename(code.co_filename) if code is not None else "builtin"
    return "%s.%s [%s] %s" % (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", "?"), src, sig)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
targets = {
    "torch.autograd.backward": torch.autograd.backward,
    "Tensor.backward": torch.Tensor.backward,
    "Optimizer.__init__": torch.optim.Optimizer.__init__,
    "SGD.step": torch.optim.SGD.step,
    "Adam.step": torch.optim.Adam.step,
    "_BaseDataLoaderIter.__next__": dl._BaseDataLoaderIter.__next__,
    "Module.__call__": torch.nn.Module.__call__,
}
if hasattr(torch.cuda, "CUDAGraph"):
    targets["CUDAGraph.replay"] = torch.cuda.CUDAGraph.replay
for name, fn in targets.items():
    print(name, "->", describe(fn), "wrapped" if hasattr(fn, "__wrapped__") else "")
