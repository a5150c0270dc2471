"""The ids of hook handles (torch.utils.hooks.RemovableHandle), which some code keys its own tables by, and the
global hook tables a library checks before it exports a model ("no global module hooks, please"): printed at start,
before training, during it and after it.
"""
import torch
import torch.nn.modules.module as module_mod


def tables():
    return (len(module_mod._global_forward_pre_hooks), len(module_mod._global_forward_hooks), len(module_mod._global_backward_hooks))


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
h1 = model.register_forward_hook(lambda m, a, o: None)
h2 = model[0].register_forward_pre_hook(lambda m, a: None)
print("first handle ids:", h1.id, h2.id, "global tables:", tables())
model(torch.randn(2, 8))
print("after a first call:", tables())
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
for step in range(40):
    i = (step % 8) * 8
    loss = torch.nn.functional.mse_loss(model(xs[i : i + 8]), ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    if step == 20:
        print("between backward and step:", tables())
    opt.step()
h3 = model[2].register_forward_hook(lambda m, a, o: None)
h1.remove()
h2.remove()
h3.remove()
print("a handle made after training:", h3.id, "tables:", tables())
print("loss %.6f" % loss.item())
