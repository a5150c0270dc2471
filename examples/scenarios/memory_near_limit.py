"""memory-near-limit: a job whose reserved memory reaches over 90% of the GPU."""
import torch
from _common import mlp, profile_steps

torch.manual_seed(0)
free, total = torch.cuda.mem_get_info()
model = mlp(4096, 4, 4096, torch.bfloat16)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
# Hold most of the card, as a large cache or a too-large batch would (plain cudaMalloc through the caching allocator).
ballast = torch.empty(int(total * 0.93) - torch.cuda.memory_reserved(), dtype=torch.uint8, device="cuda")


def step(i):
    loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("memory_near_limit", step, ["memory-near-limit"], "bf16 MLP on a GPU whose memory is 93% reserved", 4096)
