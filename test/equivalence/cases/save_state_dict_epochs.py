"""state_dict checkpoints: model, optimizer and LR scheduler state saved every 2 epochs and a best.pt, then resumed.

The most common checkpoint of all; its bytes (and the resumed training's losses) must not change under doctor.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 1))
opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
best = None
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    sched.step()
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict()}
    if epoch % 2 == 1:
        torch.save(state, "ckpt_epoch%d.pt" % epoch)
    if best is None or loss.item() < best:
        best = loss.item()
        torch.save(model.state_dict(), "best.pt")
print("best %.6f" % best)
resumed = torch.load("ckpt_epoch7.pt")
model.load_state_dict(resumed["model"])
opt.load_state_dict(resumed["optimizer"])
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("resumed from epoch %d, loss %.6f" % (resumed["epoch"], loss.item()))
