"""The ids of hook handles (torch.utils.hooks.RemovableHandle), which some code keys its own tables by: the first
ones the script makes, one made during training and one made after it (the global hook tables themselves are
tb_jit_trace_global_hooks's).
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
h1 = model.register_forward_hook(lambda m, a, o: None)
h2 = model[0].register_forward_pre_hook(lambda m, a: None)
print("first handle ids:", h1.id, h2.id)
model(torch.randn(2, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(64, 8), torch.randn(64, 1)
for step in range(40):
    i = (step % 8) * 8
    loss = torch.nn.functional.mse_loss(model(xs[i : i + 8]), ys[i : i + 8])
    opt.zero_grad()
    loss.backward()
    if step == 20:
        h4 = model[0].register_forward_hook(lambda m, a, o: None)
        print("a handle made mid-training:", h4.id)
        h4.remove()
    opt.step()
h3 = model[2].register_forward_hook(lambda m, a, o: None)
h1.remove()
h2.remove()
h3.remove()
print("a handle made after training:", h3.id)
print("loss %.6f" % loss.item())
