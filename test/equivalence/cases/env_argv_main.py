"""sys.argv, sys.orig_argv, sys.flags, sys.warnoptions and the __main__ module's attributes (names, __spec__,
__loader__, __file__, __builtins__), read after training.
"""
import os
import sys

import torch

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
print("loss %.6f" % loss.item())
main = sys.modules["__main__"]
print("argv:", sys.argv)
print("orig_argv:", [os.path.basename(a) for a in getattr(sys, "orig_argv", [])])
print("flags:", sys.flags)
print("warnoptions:", sys.warnoptions, "xoptions:", sys._xoptions)
print("main names:", sorted(vars(main)))
print("main spec:", main.__spec__, "loader:", type(main.__loader__).__name__, "file:", os.path.basename(main.__file__), os.path.isabs(main.__file__))
print("builtins:", type(main.__builtins__).__name__, "cached:", getattr(main, "__cached__", "absent"))
