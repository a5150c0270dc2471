"""mixed-precision and channels-last: a torchvision ResNet-50 trained as pytorch/examples' imagenet does
(SGD with momentum, cross-entropy, fp32 weights; cuDNN's default TF32 convolutions), with synthetic images.

  python resnet_precision.py OUT                      # fp32 (TF32 convs): expect mixed-precision
  python resnet_precision.py OUT --amp                # bf16 autocast, NCHW: expect channels-last
  python resnet_precision.py OUT --amp --channels-last  # the fixed twin: neither
"""
import argparse

import torch
import torchvision
from _common import median_step_ms, profile_steps, variant_name

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--amp", action="store_true")
ap.add_argument("--channels-last", action="store_true")
ap.add_argument("--batch", type=int, default=128)
a = ap.parse_args()

torch.manual_seed(0)
torch.backends.cudnn.benchmark = True  # as imagenet/main.py does
fmt = torch.channels_last if a.channels_last else torch.contiguous_format
model = torchvision.models.resnet50().cuda().to(memory_format=fmt)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
x = torch.randn(a.batch, 3, 224, 224, device="cuda").to(memory_format=fmt)
y = torch.randint(0, 1000, (a.batch,), device="cuda")


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


name = variant_name("resnet50", {"amp": a.amp, "channels_last": a.channels_last})
ms = median_step_ms(step)
timing = {"median_step_ms": ms, "batch": a.batch}  # measured without the profiler: the step the user sees
expect = ["channels-last"] if a.amp and not a.channels_last else ([] if a.amp else ["mixed-precision"])
profile_steps(name, step, expect, f"torchvision ResNet-50, batch {a.batch}, SGD, amp={a.amp}, channels_last={a.channels_last}", a.batch, extra_meta=timing)
