"""dataparallel: torch.nn.DataParallel over all visible GPUs (needs 2+)."""
import torch
from _common import profile_steps

torch.manual_seed(0)
assert torch.cuda.device_count() >= 2, "needs 2 GPUs"
net = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.GELU()) for _ in range(12)], torch.nn.Linear(2048, 10)).cuda()
model = torch.nn.DataParallel(net)
opt = torch.optim.AdamW(model.parameters(), fused=True)
x = torch.randn(1024, 2048, device="cuda")
y = torch.randint(0, 10, (1024,), device="cuda")


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("dataparallel", step, ["dataparallel"], "nn.DataParallel over 2 GPUs, bf16 MLP", 1024)
