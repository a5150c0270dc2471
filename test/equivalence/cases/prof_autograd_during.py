"""The legacy torch.autograd.profiler.profile around training steps 5 to 56 (record_function labels inside), over
the steps where doctor's probe opens its window (10 at the earliest, 50 at the latest), then training on to step 64.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
events = None
for step in range(64):
    if step == 5:
        legacy = torch.autograd.profiler.profile()
        legacy.__enter__()
    x, y = data[step % 8]
    with torch.autograd.profiler.record_function("my_step"):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if step == 56:
        legacy.__exit__(None, None, None)
        events = [e.name for e in legacy.function_events]
print("loss %.6f" % loss.item())
print("my_step spans:", events.count("my_step"), "addmm:", events.count("aten::addmm"))
