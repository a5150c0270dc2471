"""On a CUDA device with torch.compile (torch 2.x): a compiled model trained for 40 steps, its graph count and
recompilations printed, the weights saved. Skipped the same way in both runs elsewhere.

The saved bytes vary between plain runs: on the H200 (torch 2.11) the plain run wrote 62e6e16aea41 in six runs and
6b25fe680323 once (2026-11-28, call N), the hash doctor's runs had shown in three of nine; the printed loss, graph count
and recompilations are still compared.
# equivalence: allow file ^compiled_state\.pt$ -- its bytes differ between plain runs too (torch.compile on CUDA)
"""
import os

if not os.path.exists("/dev/nvidiactl"):
    print("skip: no CUDA device")
    raise SystemExit(0)
import torch  # noqa: E402

if not torch.cuda.is_available() or not hasattr(torch, "compile"):
    print("skip: no CUDA device or no torch.compile")
    raise SystemExit(0)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 1)).cuda()
compiled = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(8, 32, 64, device="cuda"), torch.randn(8, 32, 1, device="cuda")
for step in range(40):
    loss = torch.nn.functional.mse_loss(compiled(x[step % 8]), y[step % 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.3f" % loss.item())
import torch._dynamo.utils as dynamo_utils  # noqa: E402

stats = dynamo_utils.counters["stats"]
print("unique graphs:", stats["unique_graphs"], "recompiles:", {k: v for k, v in dynamo_utils.counters["recompiles"].items()} if "recompiles" in dynamo_utils.counters else {})
torch.save(model.state_dict(), "compiled_state.pt")
