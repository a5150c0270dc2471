"""torch.fx.symbolic_trace of the trained model: the generated code and a run of the GraphModule are printed.

FX calls the modules through its own tracer; nothing of the probe's may appear in the graph.
"""
import torch
import torch.fx


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 1)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)) + 1)


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
gm = torch.fx.symbolic_trace(model)
print(gm.code.strip())
print("fx matches:", torch.allclose(gm(torch.ones(2, 8)), model(torch.ones(2, 8))))
torch.save(gm.state_dict(), "fx_state.pt")
