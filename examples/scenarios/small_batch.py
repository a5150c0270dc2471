"""gpu-underused: a small convnet at batch 8 leaves the GPU mostly idle and its memory empty."""
import torch
from _common import profile_steps

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10),
).cuda()
opt = torch.optim.AdamW(model.parameters(), foreach=True)
x = torch.randn(8, 3, 64, 64, device="cuda")
y = torch.randint(0, 10, (8,), device="cuda")


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("small_batch", step, ["gpu-underused", "launch-bound"], "small convnet at batch 8: tiny kernels, 99% of memory free", 8, extra_steps=0)
