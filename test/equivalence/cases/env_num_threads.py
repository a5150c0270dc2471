"""torch.set_num_threads(1) before training and torch.set_num_threads(2) halfway; the thread counts are printed
around each change and the results must not depend on anything else.
"""
import torch

print("initial intra-op threads == cpu_count or set:", torch.get_num_threads() >= 1)
torch.set_num_threads(1)
print("after set_num_threads(1):", torch.get_num_threads())
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(16, 32), torch.randn(16, 1)) for _ in range(8)]
for step in range(64):
    if step == 32:
        torch.set_num_threads(2)
        print("after set_num_threads(2):", torch.get_num_threads())
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.5f" % loss.item())
