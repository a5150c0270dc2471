"""A model whose `config` is a deprecated property (it warns with a FutureWarning and counts its reads) and whose
layers expose `batch_first` as a property too, as libraries do when they rename an attribute; the number of reads is
printed at the end. Nothing outside the script may read them.
"""
import warnings

import torch

reads = {"config": 0, "batch_first": 0}


class Config(object):
    def __init__(self):
        self.hidden_size = 16
        self.num_layers = 2

    def to_dict(self):
        reads["to_dict"] = reads.get("to_dict", 0) + 1
        return dict(self.__dict__)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._config = Config()
        self.body = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

    @property
    def config(self):
        reads["config"] += 1
        warnings.warn("Net.config is deprecated, use Net.settings", FutureWarning)
        return self._config

    @property
    def batch_first(self):
        reads["batch_first"] += 1
        return True

    def forward(self, x):
        return self.body(x)


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
print("reads:", sorted(reads.items()))
