"""A GPT-2 124M written nanoGPT-style (examples/scenarios/_gpt.py: F.scaled_dot_product_attention, tied head,
dropout 0 as for pre-training) trained on a tokenised uint16 file read through np.memmap by a Dataset of
1,024-token windows and a DataLoader (shuffled windows, 2 workers, pinned memory), bf16 autocast, batch 12
x 1024 tokens, 4 micro-batches (gradient accumulation), gradient clipping, AdamW with weight-decay groups,
eager, and loss.item() every step (nanoGPT's log_interval of 1). Issue 25's third case: the GPU binds, the
sync at the end of each step is not the bound, and torch.compile measured 128 -> 103 ms on the H200.

Each fix is a flag: --compile, --log-every N (loss.item() every N steps; progress lines every max(N, 10)),
--workers N, --fused-adamw, --batch N, --accum N, --steps N."""
import math
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "scenarios"))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=150, log_every=1)
ap.add_argument("--compile", action="store_true")
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--fused-adamw", action="store_true", help="torch.optim.AdamW(fused=True)")
ap.add_argument("--batch", type=int, default=12)
ap.add_argument("--accum", type=int, default=4, help="micro-batches a step")
ap.add_argument("--seq", type=int, default=1024)
a = H.parse(ap)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from _gpt import GPT  # noqa: E402

import make_data  # noqa: E402


class TokenWindows(torch.utils.data.Dataset):
    """Non-overlapping windows of seq+1 tokens (input and shifted target), shuffled by the sampler."""

    def __init__(self, path, seq):
        self.path, self.seq = path, seq
        self.n = (os.path.getsize(path) // 2 - 1) // seq
        self.data = None  # opened in each worker

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.data is None:
            self.data = np.memmap(self.path, dtype=np.uint16, mode="r")
        chunk = torch.from_numpy(self.data[i * self.seq : (i + 1) * self.seq + 1].astype(np.int64))
        return chunk[:-1], chunk[1:]


dev = H.device(a)
path, vocab = make_data.ensure_tokens(a.data, a.smoke)
layers, d, heads = 12, 768, 12
if a.smoke:
    a.batch, a.seq, a.workers = min(a.batch, 2), min(a.seq, 64), min(a.workers, 1)
    layers, d, heads = 2, 64, 2
attn = "sdpa" if hasattr(F, "scaled_dot_product_attention") else "manual"
if attn == "manual":
    print(f"torch {torch.__version__} has no scaled_dot_product_attention: attention written out instead", file=sys.stderr)
loader = torch.utils.data.DataLoader(
    TokenWindows(path, a.seq), batch_size=a.batch, shuffle=True, drop_last=True, num_workers=a.workers,
    pin_memory=dev.type == "cuda",
)
torch.manual_seed(1337)
vocab_padded = 64 * math.ceil(vocab / 64)  # nanoGPT's 50304
model = GPT(vocab=vocab_padded, d=d, layers=layers, heads=heads, seq=a.seq, attn=attn, dropout=0.0).to(dev)
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
optimizer = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), **({"fused": True} if a.fused_adamw else {}))
if a.compile:
    model = H.compile_model(model)

clock = H.StepClock(dev, a.warmup)
batches = H.forever(loader)
for step in range(a.steps):
    for micro in range(a.accum):
        x, y = next(batches)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        with H.autocast("bf16", dev):
            loss = model(x, y) / a.accum
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    clock.tick(a.batch * a.accum)
    if clock.steps % a.log_every == 0:
        lossf = loss.item() * a.accum  # the sync nanoGPT does every step at log_interval 1
        if clock.steps % max(a.log_every, 10) == 0:
            H.progress(clock, a.steps, loss=lossf)
figures = clock.summary()
tokens_per_step = a.batch * a.accum * a.seq
H.emit(__file__, a, figures, samples_per_step=a.batch * a.accum, tokens_per_step=tokens_per_step,
       tokens_per_s=round(tokens_per_step * 1e3 / figures["mean_step_ms"]) if figures.get("mean_step_ms") else None, attention=attn)
