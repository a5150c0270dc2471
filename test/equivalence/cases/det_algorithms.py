"""torch.use_deterministic_algorithms(True) and the cuDNN flags set by the script; training with index_add and
scatter (ops with deterministic variants); the flags are printed afterwards.
"""
import torch

torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
torch.manual_seed(0)
emb = torch.nn.Embedding(20, 8)
head = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.05)
ids = torch.randint(0, 20, (64, 4))
y = torch.randn(64, 1)
for step in range(64):
    i = step % 8 * 8
    pooled = torch.zeros(8, 8).index_add(0, torch.arange(8).repeat_interleave(4), emb(ids[i : i + 8]).reshape(-1, 8))
    loss = torch.nn.functional.mse_loss(head(pooled), y[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
print("deterministic:", torch.are_deterministic_algorithms_enabled(), "cudnn:", torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
