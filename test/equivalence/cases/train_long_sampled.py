"""A run long enough for the probe to sample its steady loop (past 2048 steps): 3 epochs of 1,100 steps from a
shuffled DataLoader, an evaluation loader after each epoch, a learning-rate schedule; the script inspects the
iterator's own count and the DataLoader's `__next__` mid-epoch (what the probe reads between bursts, and what it stops
watching), prints each epoch's loss and the evaluation's, and saves the state_dicts.
"""
import torch
import torch.utils.data.dataloader as dl
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1000, gamma=0.5)
xs, ys = torch.randn(8800, 8), torch.randn(8800, 1)
train = DataLoader(TensorDataset(xs, ys), batch_size=8, shuffle=True)
evaluation = DataLoader(TensorDataset(xs[:400], ys[:400]), batch_size=50)
for epoch in range(3):
    it = iter(train)
    for i, (x, y) in enumerate(it):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if i == 700:
            print("epoch %d: yielded %d, __next__ %s" % (epoch, it._num_yielded, dl._BaseDataLoaderIter.__next__.__qualname__))
    with torch.no_grad():
        val = sum(torch.nn.functional.mse_loss(model(x), y).item() for x, y in evaluation) / len(evaluation)
    print("epoch %d loss %.6f val %.6f lr %.5f" % (epoch, loss.item(), val, sched.get_last_lr()[0]))
torch.save(model.state_dict(), "model.pt")
torch.save(opt.state_dict(), "opt.pt")
