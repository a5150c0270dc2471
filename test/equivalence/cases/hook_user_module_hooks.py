"""The script's own hooks: a forward pre-hook and a forward hook on the model, a full backward hook on a layer, and
a global module forward hook; their call counts and every hook dictionary's size are printed, then the hooks are
removed and the dictionaries printed again (they must be empty).
"""
import torch
import torch.nn.modules.module as module_mod

counts = {"pre": 0, "post": 0, "backward": 0, "global": 0}
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
handles = [
    model.register_forward_pre_hook(lambda m, a: counts.__setitem__("pre", counts["pre"] + 1)),
    model.register_forward_hook(lambda m, a, o: counts.__setitem__("post", counts["post"] + 1)),
    model[0].register_full_backward_hook(lambda m, gi, go: counts.__setitem__("backward", counts["backward"] + 1)),
    module_mod.register_module_forward_hook(lambda m, a, o: counts.__setitem__("global", counts["global"] + 1)),
]
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
print("counts:", counts)


def sizes():
    return (
        len(model._forward_pre_hooks),
        len(model._forward_hooks),
        len(model[0]._backward_hooks),
        len(module_mod._global_forward_pre_hooks),
        len(module_mod._global_forward_hooks),
        len(module_mod._global_backward_hooks),
    )


print("hook dicts with the script's hooks:", sizes())
for h in handles:
    h.remove()
print("hook dicts after removing them:", sizes())
