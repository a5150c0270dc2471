"""On a CUDA device: a model whose forward and backward are captured as CUDA graphs (make_graphed_callables) and
replayed for 60 steps with an eager optimizer step, then the script's own torch.profiler over a few more steps. doctor's
window falls among the replays and its stop detaches CUPTI (TEARDOWN_CUPTI): the replays after it, and the profiler
the script starts afterwards, must run as without doctor (torch once saw crashes re-attaching CUPTI under CUDA graphs).
Skipped the same way in both runs without a CUDA device.
"""
import os

if not os.path.exists("/dev/nvidiactl"):
    print("skip: no CUDA device")
    raise SystemExit(0)
import torch  # noqa: E402

if not torch.cuda.is_available() or not hasattr(torch.cuda, "make_graphed_callables"):
    print("skip: no CUDA device or no CUDA graphs")
    raise SystemExit(0)
from torch.profiler import ProfilerActivity, profile  # noqa: E402

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 32, 64, device="cuda"), torch.randn(8, 32, 1, device="cuda")
graphed = torch.cuda.make_graphed_callables(model, (torch.randn(32, 64, device="cuda"),))


def train(steps):
    for step in range(steps):
        loss = torch.nn.functional.mse_loss(graphed(x[step % 8]), y[step % 8])
        opt.zero_grad(set_to_none=False)  # the graph's gradients stay in place
        loss.backward()
        opt.step()
    return loss


loss = train(60)
torch.cuda.synchronize()
print("loss after 60 replayed steps %.4f" % loss.item())
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    train(4)
    torch.cuda.synchronize()
gpu = sum(1 for e in prof.events() if str(e.device_type).endswith("CUDA"))
print("the script's profiler after the replays: GPU events recorded: %s" % (gpu > 0))
print("loss %.4f" % train(10).item())
