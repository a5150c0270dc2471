"""An inference-only loop (no optimizer, model.eval(), torch.inference_mode) over 80 DataLoader batches, then the
model saved whole: the probe's step sources are DataLoader batches and forward calls here.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).eval()
data = torch.utils.data.TensorDataset(torch.randn(640, 8))
loader = torch.utils.data.DataLoader(data, batch_size=8)
counts = torch.zeros(3, dtype=torch.long)
with torch.inference_mode():
    for (x,) in loader:
        counts += torch.bincount(model(x).argmax(1), minlength=3)
print("predictions per class:", counts.tolist())
torch.save(model, "model.pt")
print("saved", type(torch.load("model.pt")).__name__)
