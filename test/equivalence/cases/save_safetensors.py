"""safetensors.torch.save_file / save_model of the trained weights and a reload, where safetensors is installed
(the check runs before torch is imported; both runs print the same skip line where it is missing).
"""
import importlib.util

if importlib.util.find_spec("safetensors") is None:
    print("skip: safetensors is not installed")
    raise SystemExit(0)
import torch
from safetensors.torch import load_file, save_file, save_model

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
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
save_file(model.state_dict(), "model.safetensors", metadata={"format": "pt"})
save_model(model, "model2.safetensors")
back = load_file("model.safetensors")
print("reloaded equal:", all(torch.equal(back[k], v) for k, v in model.state_dict().items()))
