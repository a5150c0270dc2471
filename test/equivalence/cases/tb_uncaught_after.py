"""An uncaught exception raised by the script's own code after training (an evaluation bug): the traceback printed
by sys.excepthook, and exit status 1.
"""
import torch


def evaluate(model, batches):
    scores = [model(x).mean().item() for x in batches]
    return sum(scores) / len(scores[10:])


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item(), flush=True)
print("score", evaluate(model, [x for x, _ in data]))
