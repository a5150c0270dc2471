"""host-sync: the loop calls loss.item() every micro-step and then does host-side
bookkeeping (logging, metric updates), so the GPU drains its queue and sits idle
while the host works, instead of the host running ahead."""
import time

import torch
from _common import mlp, profile_steps

torch.manual_seed(0)
model = mlp(4096, 6, 1000, torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), fused=True)
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
y = torch.randint(0, 1000, (4096,), device="cuda")
history = []


def host_bookkeeping(value: float) -> None:
    # Stands for the logging/metrics code people put after .item(): ~2 ms of Python.
    history.append(value)
    t = time.perf_counter()
    while time.perf_counter() - t < 0.002:
        pass


def step(i):
    for _ in range(4):
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        loss.backward()
        host_bookkeeping(loss.item())  # sync, then host work while the GPU idles
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("host_sync", step, ["host-sync"], "bf16 MLP whose loop calls loss.item() after every micro-step and then does 2 ms of host bookkeeping", 4096 * 4)
