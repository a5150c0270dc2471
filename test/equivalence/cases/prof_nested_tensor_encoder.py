"""Inference with a TransformerEncoder on padded batches in eval mode under no_grad: torch's fast path turns the
padded input into nested tensors. The loop has only forward calls; its outputs' checksums are printed.
"""
import torch

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=True).eval()
x = torch.randn(4, 6, 16)
mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [False] * 3 + [True] * 3, [False] * 5 + [True]])
total = 0.0
with torch.no_grad():
    for step in range(60):
        out = encoder(x, src_key_padding_mask=mask)
        total += float(out.sum())
print("checksum %.4f" % total)
