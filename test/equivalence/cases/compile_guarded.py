"""torch.compile(model) trained for 40 steps on the CPU, guarded: torch 1.13 has no torch.compile (same skip line).

A compiled graph must not contain nor be guarded on anything of the probe's; global module hooks present at
the first compiled call make dynamo warn and recompile.
"""
import torch

if not hasattr(torch, "compile"):
    print("skip: torch %s has no torch.compile" % torch.__version__.split("+")[0])
    raise SystemExit(0)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randn(64, 1)
for step in range(40):
    loss = torch.nn.functional.mse_loss(compiled(x[step % 8 * 8:][:8]), y[step % 8 * 8:][:8])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.4f" % loss.item())
import torch._dynamo.utils as dynamo_utils  # noqa: E402

print("unique graphs:", dynamo_utils.counters["stats"]["unique_graphs"])
torch.save(model.state_dict(), "model_state.pt")
