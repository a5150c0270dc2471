"""pageable-h2d: every step copies a large batch from pageable host memory with a blocking copy."""
import torch
from _common import profile_steps

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
host_batches = [torch.randn(16384, 4096) for _ in range(2)]  # 256 MiB each, pageable


def step(i):
    x = host_batches[i % 2].to("cuda")  # pageable, blocking
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("pageable_copy", step, ["pageable-h2d"], "256 MiB per step copied from pageable host memory with a blocking .to('cuda')", 16384)
