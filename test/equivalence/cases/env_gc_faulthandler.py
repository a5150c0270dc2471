"""The garbage collector and faulthandler as a demanding script uses them: gc enabled, thresholds, freeze count and
callbacks (a callback of the script's counting the collections it forces), faulthandler's state, and a
faulthandler dump of every thread's stack into a file (thread count and frames of the script printed).
"""
import faulthandler
import gc

import torch

forced = []
gc.callbacks.append(lambda phase, info: forced.append(info["generation"]) if phase == "start" and info["generation"] == 2 else None)
print("gc:", gc.isenabled(), gc.get_threshold(), gc.get_freeze_count(), "callbacks", len(gc.callbacks))
print("faulthandler enabled at start:", faulthandler.is_enabled())
faulthandler.enable()
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
gc.disable()
before = len(forced)
gc.collect(2)
gc.collect(2)
print("forced full collections seen:", len(forced) - before)
print("gc:", gc.isenabled(), gc.get_threshold(), "callbacks", len(gc.callbacks))
with open("threads.txt", "w+") as f:
    faulthandler.dump_traceback(file=f, all_threads=True)
    f.seek(0)
    dump = f.read().splitlines()
print("threads in dump:", sum(1 for l in dump if l.startswith(("Thread 0x", "Current thread 0x"))))
print("script frames:", [l.strip().split(", ")[-1] for l in dump if "env_gc_faulthandler.py" in l])
faulthandler.disable()
import os  # noqa: E402

os.remove("threads.txt")  # holds thread addresses
