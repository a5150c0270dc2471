"""Real GPU work with no step source the probe knows: no nn.Module, no optimizer, no backward, no DataLoader (a
numerical loop written with torch.nn.functional on raw tensors). doctor must still profile a time window and
diagnose it. python3 functional_loop.py [--seconds S]"""
import argparse
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=40)
a = ap.parse_args()
w1 = torch.randn(1024, 4096, device="cuda")
w2 = torch.randn(4096, 1024, device="cuda")
x = torch.randn(256, 1024, device="cuda")
end = time.time() + a.seconds
while time.time() < end:
    h = F.gelu(F.linear(x, w1.t()))
    y = F.layer_norm(F.linear(h, w2.t()), (1024,))
    x = 0.9 * x + 0.1 * y.softmax(-1)
    if float(x.abs().max()) > 1e6:  # a data-dependent check each iteration, as such loops often have
        break
