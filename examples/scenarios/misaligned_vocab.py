"""misaligned-shapes: a language-model head with a vocabulary of 50257 (not a multiple of 8) under bf16 autocast."""
import torch
from _common import profile_steps

torch.manual_seed(0)
V, D, T = 50257, 1024, 8192
emb = torch.nn.Embedding(V, D).cuda()
body = torch.nn.Sequential(*[torch.nn.Linear(D, D) for _ in range(4)]).cuda()
head = torch.nn.Linear(D, V, bias=False).cuda()
params = list(emb.parameters()) + list(body.parameters()) + list(head.parameters())
opt = torch.optim.AdamW(params, fused=True)
tok = torch.randint(0, V, (T,), device="cuda")


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = head(body(emb(tok)))
        loss = torch.nn.functional.cross_entropy(logits.float(), tok)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("misaligned_vocab", step, ["misaligned-shapes"], "LM head with vocabulary 50257 under bf16 autocast: GEMMs fall back to align1 kernels", T)
