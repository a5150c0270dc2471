"""Gradient accumulation over 4 micro-batches per optimizer step, with activation checkpointing
(torch.utils.checkpoint, reentrant: it runs a backward inside the backward) on the middle block.
"""
import torch
import torch.utils.checkpoint as ckpt


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.mid = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU())
        self.b = torch.nn.Linear(16, 1)

    def forward(self, x):
        return self.b(ckpt.checkpoint(self.mid, torch.relu(self.a(x))))


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(128, 8), torch.randn(128, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4)
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / 4
        loss.backward()
        if i % 4 == 3:
            opt.step()
            opt.zero_grad()
    print("epoch %d loss %.6f" % (epoch, loss.item() * 4))
torch.save(model.state_dict(), "model.pt")
