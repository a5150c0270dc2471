"""Batches that are a torch.Tensor subclass with __torch_function__ counting every call (how tensor-wrapping libraries
such as MaskedTensor or unit-aware tensors see torch): the calls made on the batches during training are printed.

Reading a batch's shape or dtype from outside goes through __torch_function__ too.
"""
import torch


class Counted(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counted.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


class Data(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(64, 8, generator=g)
        self.y = torch.randn(64, 1, generator=g)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.x[i].as_subclass(Counted), self.y[i]


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = torch.utils.data.DataLoader(Data(), batch_size=8)
per_epoch = []
for epoch in range(8):
    start = Counted.calls
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    per_epoch.append(Counted.calls - start)
print("loss %.6f" % loss.item())
print("__torch_function__ calls per epoch:", per_epoch)
