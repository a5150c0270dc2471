"""host-sync: loss.item() and torch.cuda.synchronize() inside the loop drain the GPU queue every step."""
import torch
from _common import mlp, profile_steps

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True
model = mlp(2048, 8, 1000)
opt = torch.optim.AdamW(model.parameters(), fused=True)
x = torch.randn(512, 2048, device="cuda")
y = torch.randint(0, 1000, (512,), device="cuda")
log = []


def step(i):
    for _ in range(8):  # micro-steps, each ending in a sync
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        log.append(loss.item())          # sync
        torch.cuda.synchronize()         # and another
        # host work after the sync while the GPU sits idle
        s = 0.0
        for v in log[-50:]:
            s += v * 1.0001
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("host_sync", step, ["host-sync"], "MLP whose loop calls loss.item() and torch.cuda.synchronize() after every micro-step", 512 * 8)
