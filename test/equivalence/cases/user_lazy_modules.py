"""A model built from lazy modules (LazyLinear infers its input size at the first call) with an auxiliary lazy head
that this run never calls, so its parameters stay uninitialized; the optimizer gets the initialized ones only.
"""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.LazyLinear(16), torch.nn.ReLU(), torch.nn.LazyLinear(1))
        self.aux_head = torch.nn.LazyLinear(4)  # used by another task, not in this run

    def forward(self, x):
        return self.body(x)


torch.manual_seed(0)
model = Net()
model(torch.randn(2, 8))  # initializes the body's parameters
opt = torch.optim.SGD(model.body.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("aux head initialized:", not isinstance(model.aux_head.weight, torch.nn.parameter.UninitializedParameter))
