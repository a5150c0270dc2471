"""A nanoGPT-style loop: batches from get_batch() over a memory-mapped token file (no DataLoader), bf16
autocast, fused AdamW, gradient accumulation, eager. Follow the advice: --compile."""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scenarios"))
from _gpt import GPT  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--compile", action="store_true")
ap.add_argument("--iters", type=int, default=60)
a = ap.parse_args()

B, T, ACCUM = 12, 1024, 2
path = os.path.join(tempfile.gettempdir(), "gpuwise_tokens.bin")
if not os.path.exists(path):
    np.random.default_rng(0).integers(0, 50257, size=20_000_000, dtype=np.uint16).tofile(path)


def get_batch():
    data = np.memmap(path, dtype=np.uint16, mode="r")  # re-opened each batch, as nanoGPT does
    ix = torch.randint(len(data) - T - 1, (B,))
    x = torch.stack([torch.from_numpy(data[i : i + T].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + T].astype(np.int64)) for i in ix])
    return x.pin_memory().to("cuda", non_blocking=True), y.pin_memory().to("cuda", non_blocking=True)


torch.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
model = GPT().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), fused=True)
if a.compile:
    model = torch.compile(model)
x, y = get_batch()
for it in range(a.iters):
    for micro in range(ACCUM):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, y) / ACCUM
        x, y = get_batch()  # prefetch the next batch while the GPU works
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    if it % 20 == 0:
        print(f"iter {it}: loss {loss.item() * ACCUM:.4f}")
