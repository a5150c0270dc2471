"""A hand-written update (no torch.optim): p -= lr * p.grad under no_grad for 64 steps, then the model saved whole
and as a state_dict.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.05 * p.grad
print("loss %.6f" % loss.item())
torch.save(model.state_dict(), "state.pt")
torch.save(model, "model.pt")
print("saved")
