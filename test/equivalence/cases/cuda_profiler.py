"""On a CUDA device: the user's torch.profiler with CPU and CUDA activities over training steps 12 to 24 (where
doctor's probe opens its window), then again over an evaluation after training; what each recorded is printed.
Skipped the same way in both runs without a CUDA device.
"""
import os

if not os.path.exists("/dev/nvidiactl"):
    print("skip: no CUDA device")
    raise SystemExit(0)
import torch  # noqa: E402

if not torch.cuda.is_available():
    print("skip: no CUDA device")
    raise SystemExit(0)
from torch.profiler import ProfilerActivity, profile  # noqa: E402

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 32, 64, device="cuda"), torch.randn(8, 32, 1, device="cuda")


def train(steps):
    for step in range(steps):
        loss = torch.nn.functional.mse_loss(model(x[step % 8]), y[step % 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss


def summary(prof):
    names = [e.name for e in prof.events()]
    gpu = sum(1 for e in prof.events() if str(e.device_type).endswith("CUDA"))
    return "addmm %d, GPU events recorded: %s" % (names.count("aten::addmm"), gpu > 0)


train(12)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    train(12)
    torch.cuda.synchronize()
loss = train(40)
print("loss %.4f" % loss.item())
print("during training:", summary(prof))
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    with torch.no_grad():
        model(x[0])
    torch.cuda.synchronize()
print("after training:", summary(prof))
