"""An exception raised in a Dataset's __getitem__ (no workers) in the third epoch: the traceback printed on stderr
and the exit status are compared; the traceback must hold the script's and torch's frames only.
"""
import torch


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        if self.epoch == 2 and i == 37:
            raise ValueError("corrupt sample %d" % i)
        g = torch.Generator().manual_seed(i)
        return torch.randn(8, generator=g), torch.randn(1, generator=g)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = Data()
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    data.epoch = epoch
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch %d loss %.6f" % (epoch, loss.item()), flush=True)
