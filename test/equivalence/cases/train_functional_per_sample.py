"""Per-sample gradients with functorch / torch.func (make_functional or functional_call, vmap over grad) after a
normal training phase; where neither exists the case prints the same skip line in both runs.
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
try:
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}

    def sample_loss(p, x, y):
        return torch.nn.functional.mse_loss(functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))

    grads = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, y)
    norms = [round(v.flatten(1).norm(dim=1).sum().item(), 4) for v in grads.values()]
except ImportError:
    try:
        from functorch import grad, make_functional, vmap
    except ImportError:
        print("skip: neither torch.func nor functorch")
        raise SystemExit(0)
    fmodel, params = make_functional(model)

    def sample_loss(p, x, y):
        return torch.nn.functional.mse_loss(fmodel(p, x.unsqueeze(0)), y.unsqueeze(0))

    grads = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, y)
    norms = [round(g.flatten(1).norm(dim=1).sum().item(), 4) for g in grads]
print("per-sample gradient norms:", norms)
