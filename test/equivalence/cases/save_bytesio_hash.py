"""torch.save of the model and of its state_dict into memory (io.BytesIO), with the bytes' digests printed.

Checkpoints streamed to object stores never touch the disk; the serialized bytes must be the plain run's.
"""
import hashlib
import io

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv1d(2, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
data = torch.utils.data.TensorDataset(torch.randn(64, 2, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
for name, obj in (("state_dict", model.state_dict()), ("optimizer", opt.state_dict()), ("model", model)):
    buf = io.BytesIO()
    try:
        torch.save(obj, buf)
        print(name, len(buf.getvalue()), hashlib.sha256(buf.getvalue()).hexdigest()[:16])
    except Exception as e:
        print(name, "failed:", type(e).__name__)
