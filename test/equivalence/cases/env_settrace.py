"""A coverage-like sys.settrace of the script's own: it counts 'call' events of functions defined in this file
during training and checks that it is still the trace function afterwards.
"""
import sys

import torch

calls = {}


def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == __file__:
        calls[frame.f_code.co_name] = calls.get(frame.f_code.co_name, 0) + 1
    return None


def batch(step, data):
    return data[step % 8]


def train_step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
sys.settrace(tracer)
for step in range(64):
    loss = train_step(model, opt, *batch(step, data))
still = sys.gettrace() is tracer
sys.settrace(None)
print("loss %.6f" % loss.item())
print("calls:", sorted(calls.items()), "tracer kept:", still)
