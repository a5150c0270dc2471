"""pickle.dumps(model) (protocols 2 and 5) after training, loaded back and called.

Plain pickle is what multiprocessing, Ray and joblib use to ship a model; closures of a probe cannot be pickled.
(The pickled bytes themselves are not printed: torch's pickling of a storage names it by its address.)
"""
import pickle

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
for protocol in (2, 5):
    try:
        blob = pickle.dumps(model, protocol=protocol)
        back = pickle.loads(blob)
        print("protocol", protocol, "reloaded", type(back).__name__, "%.6f" % back(torch.ones(1, 8)).sum().item())
    except Exception as e:
        print("protocol", protocol, "failed:", type(e).__name__, e)
