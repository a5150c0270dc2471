"""An evaluation-only loop: a torchvision ResNet-50 over pre-made batches on the GPU under
torch.inference_mode(), fp32, no optimizer, no DataLoader. Follow the advice: --bf16 --channels-last."""
import argparse

import torch
import torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--bf16", action="store_true")
ap.add_argument("--channels-last", action="store_true")
ap.add_argument("--batches", type=int, default=120)
a = ap.parse_args()

fmt = torch.channels_last if a.channels_last else torch.contiguous_format
model = torchvision.models.resnet50().cuda().eval().to(memory_format=fmt)
batches = [torch.randn(128, 3, 224, 224, device="cuda").to(memory_format=fmt) for _ in range(4)]
correct = torch.zeros((), device="cuda")
with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.bf16):
    for i in range(a.batches):
        logits = model(batches[i % 4])
        correct += (logits.argmax(1) == 0).sum()
print("top-1 hits:", int(correct.item()))
