"""A starved DataLoader: ResNet-50 on images decoded and augmented on the CPU, one process.

    gpuwise doctor -- python examples/train/starved_dataloader.py           # the problem
    gpuwise doctor -- python examples/train/starved_dataloader.py --fixed   # what doctor recommends

The problem version loads in the training process (num_workers=0) into pageable memory, so the GPU
waits for every batch. --fixed applies the usual change: worker processes, pinned memory, and
non-blocking copies. The script knows nothing of gpuwise; it needs a CUDA GPU and torchvision.
"""
import argparse
import os
import time

import numpy as np
import torch
import torchvision
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


class SyntheticImages(Dataset):
    """Stands for an image folder: each item is a 320x320 picture turned into a 224x224 tensor by
    the usual ImageNet augmentation (crop, flip, colour jitter, normalise), all on the CPU."""

    def __init__(self, n):
        self.n = n
        self.aug = transforms.Compose(
            [
                transforms.RandomResizedCrop(224),
                transforms.RandomHorizontalFlip(),
                transforms.ColorJitter(0.2, 0.2, 0.2),
                transforms.ToTensor(),
                transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
            ]
        )

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = Image.fromarray(rng.integers(0, 255, (320, 320, 3), dtype=np.uint8))
        return self.aug(img), int(rng.integers(0, 1000))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--fixed", action="store_true", help="worker processes, pinned memory, non-blocking copies")
    ap.add_argument("--workers", type=int, default=min(12, max(1, (os.cpu_count() or 2) - 2)))
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50(weights=None).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = SyntheticImages(args.steps * args.batch_size)
    if args.fixed:
        loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, pin_memory=True, persistent_workers=True, prefetch_factor=4)
    else:
        loader = DataLoader(data, batch_size=args.batch_size, shuffle=True)

    t0 = None
    for step, (x, y) in enumerate(loader, 1):
        if step == 6:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        x = x.cuda(non_blocking=args.fixed).to(memory_format=torch.channels_last)
        y = y.cuda(non_blocking=args.fixed)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    if t0 is not None:
        n = step - 5
        dt = time.perf_counter() - t0
        print("starved_dataloader%s: %.1f ms/step, %.0f images/s" % (" --fixed" if args.fixed else "", dt / n * 1000, n * args.batch_size / dt))


if __name__ == "__main__":
    main()
