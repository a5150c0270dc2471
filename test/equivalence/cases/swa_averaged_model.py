"""torch.optim.swa_utils.AveragedModel (which deep-copies the model) with SWALR and update_bn, then saved.

The averaged model wraps a deep copy of the module; its state_dict and the averaged module are saved.
"""
import torch
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
swa = AveragedModel(model)
swa_sched = SWALR(opt, swa_lr=0.01)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch >= 4:
        swa.update_parameters(model)
        swa_sched.step()
update_bn(((x,) for x, _ in loader), swa)
swa.eval()
print("loss %.6f swa %.6f averaged %d" % (loss.item(), swa(torch.ones(2, 8))[0].item(), swa.n_averaged.item()))
torch.save(swa.state_dict(), "swa_state.pt")
torch.save(swa.module, "swa_module.pt")  # the AveragedModel itself holds a local function on torch 1.13
print("swa module reloaded", type(torch.load("swa_module.pt")).__name__)
