"""faulthandler's dump of the current thread from inside a backward hook (as a watchdog that dumps a slow step
does), into a file of the working directory, at steps 0 and 25 of a loop without a DataLoader.
"""
import faulthandler

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
dump = open("dump.txt", "w")
for step in range(40):
    i = (step % 8) * 8
    out = model(xs[i : i + 8])
    if step in (0, 25):
        out.register_hook(lambda g: faulthandler.dump_traceback(file=dump, all_threads=False) or g)
    loss = torch.nn.functional.mse_loss(out, ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
dump.close()
print("loss %.6f" % loss.item())
