"""no-tensor-cores: large fp32 matmuls with TF32 disabled run on SIMT cores."""
import torch
from _common import mlp, profile_steps

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
model = mlp(4096, 6, 4096)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=True)
x = torch.randn(2048, 4096, device="cuda")


def step(i):
    loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("fp32_matmul", step, ["no-tensor-cores"], "4096-wide MLP in fp32 with TF32 disabled: matmuls on SIMT cores", 2048)
