"""io_slow_pipe_huge_print with PYTHONUNBUFFERED=1 (as many job scripts and containers set it, for prompt logs):
stdout is a pipe a slow reader drains; after training one print() of a 4 MB report and a final line. Unbuffered,
the print goes straight to the descriptor: on a pipe made non-blocking the write stops short and the rest is lost
without an error (issue 43 item 1: 65 KB of 4 MB arrived, exit 0); plainly every byte arrives.

# equivalence: stdio stdout=slow stderr=pipe
# equivalence: env PYTHONUNBUFFERED=1
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
