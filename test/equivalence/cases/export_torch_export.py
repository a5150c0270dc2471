"""torch.export.export of the trained model (torch 2.1+), saved with torch.export.save and loaded back.

torch 1.13 has no torch.export: the case prints the same skip line in both runs there.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
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
try:
    import torch.export as texport
except ImportError:
    print("skip: torch %s has no torch.export" % torch.__version__.split("+")[0])
else:
    model.eval()
    ep = texport.export(model, (torch.randn(2, 8),))
    print("exported ops:", sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"}))
    texport.save(ep, "model.pt2")
    back = texport.load("model.pt2")
    print("export matches:", torch.allclose(back.module()(torch.ones(2, 8)), model(torch.ones(2, 8))))
