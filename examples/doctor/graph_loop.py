"""A whole training step captured once in a CUDA graph and replayed (the pattern of PyTorch's CUDA-graph notes:
warm-up iterations on a side stream, capture with a capturable optimizer, then replay). After the warm-up, no optimizer
step, forward or backward runs in Python: the steps are the replays. python3 graph_loop.py [--steps N]"""
import argparse

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
a = ap.parse_args()
model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 2048)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=True)
static_x = torch.randn(512, 2048, device="cuda")
static_y = torch.randn(512, 2048, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(static_x), static_y).backward()
        opt.step()
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(g):
    static_loss = torch.nn.functional.mse_loss(model(static_x), static_y)
    static_loss.backward()
    opt.step()
for i in range(a.steps):
    static_x.copy_(torch.randn(512, 2048, device="cuda"))
    g.replay()
print("loss", float(static_loss))
