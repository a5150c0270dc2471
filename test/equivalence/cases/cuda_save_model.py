"""On a CUDA device: 64 training steps, the CUDA model saved whole and as a state_dict, reloaded onto the CPU, and
the caching allocator's figures printed (nothing of doctor's may allocate on the device). Skipped the same way in
both runs without a CUDA device (checked before torch is imported where there is no NVIDIA driver at all).
"""
import os

if not os.path.exists("/dev/nvidiactl"):
    print("skip: no CUDA device")
    raise SystemExit(0)
import torch  # noqa: E402

if not torch.cuda.is_available():
    print("skip: no CUDA device")
    raise SystemExit(0)
torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(512, 64), torch.randn(512, 1))
loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, pin_memory=True)
for epoch in range(8):
    for x, y in loader:
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
torch.cuda.synchronize()
print("loss %.4f" % loss.item())
print("allocated %d peak %d" % (torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated()))
torch.save(model, "model_cuda.pt")
torch.save(model.state_dict(), "state_cuda.pt")
back = torch.load("model_cuda.pt", map_location="cpu", **({"weights_only": False} if "weights_only" in torch.load.__code__.co_varnames else {}))
print("reloaded on", next(back.parameters()).device)
