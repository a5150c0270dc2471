"""A CPU training run on a machine that may have GPUs: the script never touches CUDA, so neither may doctor. At the
end it prints whether the CUDA driver library is mapped into the process, how many descriptors it holds on
/dev/nvidia*, and torch.cuda.is_initialized(). (Asking `torch.cuda.is_available()` loads the driver and opens its
devices: a fork or a closerange() afterwards then meets them.)
"""
import os

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
with open("/proc/self/maps") as f:
    print("libcuda mapped:", any("libcuda.so" in line for line in f))
nvidia = 0
for fd in os.listdir("/proc/self/fd"):
    try:
        nvidia += os.readlink("/proc/self/fd/" + fd).startswith("/dev/nvidia")
    except OSError:
        pass
print("descriptors on /dev/nvidia*:", nvidia)
print("torch.cuda.is_initialized():", torch.cuda.is_initialized())
