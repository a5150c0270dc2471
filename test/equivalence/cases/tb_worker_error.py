"""An exception in a DataLoader worker's __getitem__ in the second epoch: the re-raised error in the main process,
with the worker's original traceback, and the exit status are compared. One worker: with two, whether the failed
batch arrives before or after the next one (a race) changes the main process's traceback.
"""
import torch


class Data(torch.utils.data.Dataset):
    def __init__(self):
        self.x = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if i == 37 and getattr(self, "epoch", 0) == 1:
            raise KeyError("sample %d has no label" % i)
        return self.x[i], self.x[i, :1]


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = Data()
loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=1)
for epoch in range(4):
    data.epoch = epoch
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch %d loss %.6f" % (epoch, loss.item()), flush=True)
