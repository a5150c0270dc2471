import torch


def batches():
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(8, 8, generator=g), torch.randn(8, 1, generator=g)) for _ in range(8)]
