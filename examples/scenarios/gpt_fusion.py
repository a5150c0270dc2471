"""fusion: a GPT-2 124M written the way nanoGPT writes it (pre-LayerNorm blocks, GELU MLP, SDPA attention,
bf16 autocast, fused AdamW), trained eagerly: the GPU is busy back to back, yet a large share of its time
goes to memory-bound elementwise and normalisation kernels between the GEMMs.

  python gpt_fusion.py OUT             # eager: expect fusion (torch.compile)
  python gpt_fusion.py OUT --compile   # the fixed twin: no fusion finding, never "compile the model"
"""
import argparse
import torch
from _gpt import GPT
from _common import median_step_ms, profile_steps, variant_name

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--compile", action="store_true")
ap.add_argument("--batch", type=int, default=12)
ap.add_argument("--seq", type=int, default=1024)
a = ap.parse_args()


torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True
model = GPT(seq=a.seq).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
fwd = torch.compile(model) if a.compile else model
x = torch.randint(0, 50257, (a.batch, a.seq), device="cuda")
y = torch.randint(0, 50257, (a.batch, a.seq), device="cuda")


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = fwd(x, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


name = variant_name("gpt2_fusion", {"compiled": a.compile})
ms = median_step_ms(step, warmup=6 if a.compile else 4)
timing = {"median_step_ms": ms, "batch": a.batch, "seq": a.seq}  # measured without the profiler: the step the user sees
profile_steps(name, step, [] if a.compile else ["fusion"], f"nanoGPT-style GPT-2 124M, batch {a.batch}x{a.seq}, bf16 autocast, compiled={a.compile}", a.batch * a.seq, extra_meta=timing)
