"""stdout is a pipe a slow reader drains (a log shipper, `| ssh host cat`): after training, one print() of a
4 MB report (a JSON dump of per-step metrics, the way a script logs its history) and a final line. Plainly the
print waits for the reader and all 4,020,001 bytes arrive; the script's stdout must stay blocking under doctor
(issue 43 item 1: it became O_NONBLOCK, and the print lost bytes or raised BlockingIOError).

# equivalence: stdio stdout=slow stderr=pipe
"""
import json

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
history = []
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append({"step": step, "loss": round(loss.item(), 6)})
print("loss %.6f" % loss.item())
report = json.dumps({"history": history, "padding": "x" * (4_020_000 - len(json.dumps({"history": history, "padding": ""})))})
print(report)
print("report bytes", len(report) + 1)
