"""A loader that is fine and a model that binds the GPU: torchvision's ViT-B/16 (random init) at batch 128 in
fp32 with torch's default matmul precision (no TF32), AdamW; the images come from an in-memory pool of uint8
tensors (a random flip in the workers, 6 workers; 19 MB of uint8 a batch) and are normalised on the GPU. The loader
delivers far more than the GPU takes, so the input stage must show capacity to spare, and the lever is
precision: --amp bf16 (or --tf32: torch.backends.cuda.matmul.allow_tf32).

Flags: --amp bf16, --tf32, --compile, --batch N, --workers N, --pin-memory, --steps N."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=120)
H.loader_flags(ap, workers=6)
H.model_flags(ap)
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--pool", type=int, default=1024, help="distinct images held in memory")
a = H.parse(ap)
H.require(__file__, "torchvision")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402

dev = H.device(a)  # --tf32 (the harness's) allows TF32 in fp32 matmuls and convolutions
side = 224
if a.smoke:
    a.batch, a.pool, side = min(a.batch, 4), 16, 32


class InMemoryImages(torch.utils.data.Dataset):
    """A pool of decoded uint8 images, indexed round and round (an epoch is 50 passes over the pool)."""

    def __init__(self, pool, side):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (pool, 3, side, side), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 1000, (pool,), generator=g)

    def __len__(self):
        return len(self.images) * 50

    def __getitem__(self, i):
        img = self.images[i % len(self.images)]
        if torch.rand(()) < 0.5:
            img = img.flip(-1)
        return img, self.labels[i % len(self.images)]


train_set = InMemoryImages(a.pool, side)
loader = torch.utils.data.DataLoader(train_set, batch_size=a.batch, shuffle=True, drop_last=True, **H.loader_kwargs(a, dev))
if a.smoke:
    model = torchvision.models.VisionTransformer(image_size=side, patch_size=16, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128)
else:
    model = torchvision.models.vit_b_16()
model = model.to(dev)
if a.channels_last:
    model = model.to(memory_format=torch.channels_last)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
if a.compile:
    model = H.compile_model(model, a.compile_mode)
mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255

clock = H.StepClock(dev, a.warmup)
for images, target in H.forever(loader):
    images = (images.to(dev, non_blocking=a.pin_memory).float() - mean) / std
    target = target.to(dev, non_blocking=a.pin_memory)
    if a.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    with H.autocast(a.amp, dev):
        loss = F.cross_entropy(model(images), target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    clock.tick(images.shape[0])
    if clock.steps % a.log_every == 0:
        H.progress(clock, a.steps, loss=loss.item())
    if clock.steps >= a.steps:
        break
H.emit(__file__, a, clock.summary(), samples_per_step=a.batch)
