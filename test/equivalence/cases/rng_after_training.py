"""Random streams after training with a shuffling DataLoader and dropout: torch.rand, torch's generator state digest,
Python's random and numpy's, printed after training. Nothing else may draw from the global generators.
"""
import hashlib
import random

import numpy as np
import torch

torch.manual_seed(0)
random.seed(0)
np.random.seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.2), torch.nn.ReLU(), torch.nn.Linear(16, 1))
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
print("torch.rand:", torch.rand(3).tolist())
print("torch state:", hashlib.sha256(torch.get_rng_state().numpy().tobytes()).hexdigest()[:16], "initial seed", torch.initial_seed())
print("random:", random.random(), "numpy:", np.random.rand())
