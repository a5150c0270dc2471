"""torch.jit.trace of the trained model (check_trace on), saved, loaded and run; the graph's text is printed.

The common export at the end of training; the trace must not contain or warn about anything but the model.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 3))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(64, 1, 6, 6), torch.randint(0, 3, (64,)))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
model.eval()
example = torch.randn(2, 1, 6, 6)
traced = torch.jit.trace(model, example)
traced.save("traced.pt")
back = torch.jit.load("traced.pt")
print("traced matches:", torch.allclose(back(example), model(example)))
print("graph nodes:", sorted({n.kind() for n in traced.inlined_graph.nodes()}))
