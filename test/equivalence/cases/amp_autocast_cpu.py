"""Mixed precision on the CPU: torch.autocast("cpu", bfloat16) around the forward, a GradScaler enabled only where
CUDA is, the losses and the autocast state printed, a checkpoint with the scaler's state saved.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
        loss = torch.nn.functional.mse_loss(out.float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    if step % 16 == 15:
        print("step %d loss %.4f out dtype %s" % (step + 1, loss.item(), out.dtype))
print("autocast on after the block:", torch.is_autocast_cpu_enabled())
torch.save({"model": model.state_dict(), "scaler": scaler.state_dict()}, "amp.pt")
