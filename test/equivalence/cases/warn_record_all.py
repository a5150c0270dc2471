"""Every warning raised during training, recorded with warnings.catch_warnings(record=True) and "always": categories
and messages printed (the script's own two warnings among them).
"""
import warnings

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for epoch in range(8):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch in (2, 6):
            warnings.warn("epoch %d: learning rate looks high" % epoch, RuntimeWarning)
print("loss %.6f" % loss.item())
for w in caught:
    print("warning:", w.category.__name__, str(w.message).splitlines()[0][:100])
