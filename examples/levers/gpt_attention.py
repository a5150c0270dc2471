"""A GPT-2 124M whose attention is written out (examples/scenarios/_gpt.py with attn="manual": q @ k^T * scale,
masked_fill with a causal mask buffer, softmax, @ v; dropout 0), batch 16 x 1024 tokens, bf16 autocast,
AdamW, eager; batches by nanoGPT's get_batch() from the token memmap (no DataLoader). Issue 26's first case:
on the H200 replacing the attention with F.scaled_dot_product_attention took 174 -> 103 ms, and compiling
after that 103 -> 38.6 ms; compile is not a safe substitute for SDPA (Inductor rewrites such patterns only
for some shapes and masks).

Flags: --attn manual|sdpa, --compile, --batch N, --steps N."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "pace"))
sys.path.insert(0, os.path.join(here, "..", "scenarios"))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=100)
ap.add_argument("--attn", choices=["manual", "sdpa"], default="manual")
ap.add_argument("--compile", action="store_true")
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--seq", type=int, default=1024)
a = H.parse(ap)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from _gpt import GPT  # noqa: E402

import make_data  # noqa: E402

if a.attn == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
    H.skip(__file__, f"--attn sdpa needs F.scaled_dot_product_attention (torch 2.0+), torch here is {torch.__version__}")
dev = H.device(a)
path, vocab = make_data.ensure_tokens(a.data, a.smoke)
layers, d, heads = 12, 768, 12
if a.smoke:
    a.batch, a.seq = min(a.batch, 2), min(a.seq, 64)
    layers, d, heads = 2, 64, 2


def get_batch():
    data = np.memmap(path, dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - a.seq - 1, (a.batch,))
    x = torch.stack([torch.from_numpy(data[i : i + a.seq].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + a.seq].astype(np.int64)) for i in ix])
    if dev.type == "cuda":
        return x.pin_memory().to(dev, non_blocking=True), y.pin_memory().to(dev, non_blocking=True)
    return x, y


torch.manual_seed(1337)
model = GPT(vocab=64 * -(-vocab // 64), d=d, layers=layers, heads=heads, seq=a.seq, attn=a.attn, dropout=0.0).to(dev)
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
if a.compile:
    model = H.compile_model(model)

clock = H.StepClock(dev, a.warmup)
x, y = get_batch()
for step in range(a.steps):
    with H.autocast("bf16", dev):
        loss = model(x, y)
    x, y = get_batch()  # the next batch while the GPU works, as nanoGPT does
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    clock.tick(a.batch)
    if clock.steps % a.log_every == 0:
        H.progress(clock, a.steps, loss=loss.item())
figures = clock.summary()
tokens = a.batch * a.seq
H.emit(__file__, a, figures, samples_per_step=a.batch, tokens_per_step=tokens,
       tokens_per_s=round(tokens * 1e3 / figures["mean_step_ms"]) if figures.get("mean_step_ms") else None)
