"""torch.save(model) at the end of training, then torch.load of it.

Pickles the whole module, so anything the probe attached to it (a hook, a closure) is pickled too: the word
language model example lost its checkpoint this way. The file's bytes are compared.
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
torch.save(model, "model.pt")
back = torch.load("model.pt")
print("reloaded", type(back).__name__, "hooks", len(back._forward_pre_hooks), len(back._forward_hooks))
print("same output", torch.equal(back(torch.ones(2, 8)), model(torch.ones(2, 8))))
