"""A Lightning-style checkpoint written without Lightning: the dict a LightningModule's trainer saves (epoch,
global_step, version, state_dict, optimizer_states, lr_schedulers, callbacks, loops, hyper_parameters), saved
to epoch=N-step=M.ckpt and last.ckpt each epoch, then reloaded.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
global_step = 0
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        global_step += 1
    sched.step()
    ckpt = {
        "epoch": epoch,
        "global_step": global_step,
        "pytorch-lightning_version": "2.4.0",
        "state_dict": {"model." + k: v for k, v in model.state_dict().items()},
        "loops": {"fit_loop": {"epoch_progress": {"current": {"completed": epoch + 1}}}},
        "callbacks": {"ModelCheckpoint{'monitor': 'val_loss'}": {"best_model_score": torch.tensor(loss.item())}},
        "optimizer_states": [opt.state_dict()],
        "lr_schedulers": [sched.state_dict()],
        "hparams_name": "kwargs",
        "hyper_parameters": {"lr": 0.01, "hidden": 16},
    }
    if epoch % 4 == 3:
        torch.save(ckpt, "epoch=%d-step=%d.ckpt" % (epoch, global_step))
    torch.save(ckpt, "last.ckpt")
back = torch.load("last.ckpt")
print("loss %.6f last.ckpt epoch %d step %d keys %s" % (loss.item(), back["epoch"], back["global_step"], sorted(back)))
