"""A model traced with torch.jit.trace before it trains (an export check), then checked by a "no global hooks"
guard before each export, as deployment code does; trained eagerly without a DataLoader, and traced again.
"""
import torch
import torch.nn.modules.module as module_mod


def no_global_hooks():
    return not (module_mod._global_forward_pre_hooks or module_mod._global_forward_hooks or module_mod._global_backward_hooks)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
example = torch.randn(4, 8)
traced = torch.jit.trace(model, example)
print("after the first trace, no global hooks:", no_global_hooks())
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
for step in range(40):
    i = (step % 8) * 8
    loss = torch.nn.functional.mse_loss(model(xs[i : i + 8]), ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 10:
        print("at step 10, after the optimizer step, no global hooks:", no_global_hooks())
print("loss %.6f" % loss.item())
print("after training, no global hooks:", no_global_hooks())
torch.jit.save(torch.jit.trace(model, example), "traced.pt")
