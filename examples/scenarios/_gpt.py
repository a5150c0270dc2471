"""A GPT-2 124M written the way nanoGPT writes it (pre-LayerNorm blocks, GELU MLP, SDPA attention, tied head),
shared by the scenario and corpus scripts that need a real transformer step. attn="manual" is attention
written out as nanoGPT's fallback and many hand-written GPTs do it (scores, causal mask, softmax, @ v)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, h, seq=1024, attn="sdpa", dropout=0.1):
        super().__init__()
        self.h, self.attn, self.p = h, attn, dropout
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(dropout)
        if attn == "manual":
            self.attn_drop = nn.Dropout(dropout)
            self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        if self.attn == "manual":
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            y = self.attn_drop(F.softmax(att, dim=-1)) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.p if self.training else 0.0)
        x = x + self.drop(self.proj(y.transpose(1, 2).contiguous().view(B, T, C)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab=50304, d=768, layers=12, heads=12, seq=1024, attn="sdpa", dropout=0.1):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, seq, attn, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight
        for p in self.parameters():
            nn.init.normal_(p, std=0.02 / math.sqrt(2 * layers)) if p.dim() > 1 else None

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
