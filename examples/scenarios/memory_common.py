"""Shared pieces of the `gpuwise memory` scenario scripts: a small GPT-like model,
history recording, and writing a snapshot with its meta file.

Every scenario writes OUT/NAME.pickle.gz (the `_dump_snapshot` pickle, gzipped) and
OUT/NAME.meta.json: what was run, torch.cuda.max_memory_allocated()/reserved() as the
script measured them, and what gpuwise is expected to report (`expect`).
"""
import gzip
import json
import os
import shutil

import torch
import torch.nn as nn


class TinyGPT(nn.Module):
    def __init__(self, vocab=8192, d=512, layers=6, heads=8, seq=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1), persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        x = self.blocks(x, mask=self.mask[:t, :t], is_causal=True)
        return self.head(x)


def start_recording(stacks="all", max_entries=200_000):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks=stacks, max_entries=max_entries)


def stop_recording():
    torch.cuda.memory._record_memory_history(enabled=None)


def dump(out, name):
    """Dumps the snapshot to OUT/NAME.pickle.gz (written plain first, as users do, then gzipped)."""
    plain = os.path.join(out, name + ".pickle")
    torch.cuda.memory._dump_snapshot(plain)
    with open(plain, "rb") as src, gzip.GzipFile(filename=plain + ".gz", mode="wb", compresslevel=9, mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(plain)
    return plain + ".gz"


def write_meta(out, name, story, expect, peaks=None, **extra):
    """`peaks`: (max allocated, max reserved) measured earlier; default: torch's peaks now."""
    peak_alloc, peak_reserved = peaks or (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())
    meta = {
        "scenario": name,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "story": story,
        "peak_alloc": peak_alloc,
        "peak_reserved": peak_reserved,
        "expect": expect,
        **extra,
    }
    with open(os.path.join(out, name + ".meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    size = os.path.getsize(os.path.join(out, name + ".pickle.gz"))
    print(f"{name}: peak_alloc={meta['peak_alloc']} peak_reserved={meta['peak_reserved']} snapshot={size / 1e6:.2f} MB gz")
    return meta


def batch_of(bs, seq, vocab, device="cuda"):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randint(0, vocab, (bs, seq), device=device, generator=g)
    return x, torch.roll(x, -1, 1)


def train_step(model, opt, x, y):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def cap_memory(total_bytes):
    """Limits this process to `total_bytes` of the GPU so an OOM comes fast and the same on any GPU size."""
    free, total = torch.cuda.mem_get_info()
    frac = min(0.95, total_bytes / total)
    torch.cuda.set_per_process_memory_fraction(frac)
    return int(frac * total)
