"""ResNet-50 on torchvision's FakeData: each image is made in the DataLoader workers (a random 3x224x224
tensor turned into a PIL image, then ToTensor and Normalize, as FakeData does), batch 256, 4 workers, SGD,
fp32, loss.item() every 10 steps. Issue 25's second case: the loader caps the step (about 1,720 images/s on
the H200's host) while the report's top lever was mixed precision. 50,000 images: no epoch ends in a run.

Each fix is a flag: --workers N, --pin-memory, --persistent-workers, --prefetch-factor N, --amp bf16,
--channels-last, --compile [--compile-mode reduce-overhead], --drop-last, --batch N, --steps N."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=150)
H.loader_flags(ap, workers=4)
H.model_flags(ap)
ap.add_argument("--drop-last", action="store_true", help="DataLoader(drop_last=True): no partial batch at the epoch's end")
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--images", type=int, default=50_000)
a = H.parse(ap)
H.require(__file__, "torchvision", "PIL")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from torchvision import datasets, transforms  # noqa: E402

dev = H.device(a)
side = 224
if a.smoke:
    a.batch, a.images, side = min(a.batch, 4), 64, 32
train_set = datasets.FakeData(
    size=a.images, image_size=(3, side, side), num_classes=1000,
    transform=transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]),
)
loader = torch.utils.data.DataLoader(train_set, batch_size=a.batch, shuffle=True, drop_last=a.drop_last, **H.loader_kwargs(a, dev))
model = torchvision.models.resnet50().to(dev)
if a.channels_last:
    model = model.to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
if a.compile:
    model = H.compile_model(model, a.compile_mode)

clock = H.StepClock(dev, a.warmup)
for images, target in H.forever(loader):
    images, target = images.to(dev, non_blocking=a.pin_memory), target.to(dev, non_blocking=a.pin_memory)
    if a.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    with H.autocast(a.amp, dev):
        loss = F.cross_entropy(model(images), target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    clock.tick(images.shape[0])
    if clock.steps % 10 == 0:
        value = loss.item()
        if clock.steps % a.log_every == 0:
            H.progress(clock, a.steps, loss=value)
    if clock.steps >= a.steps:
        break
H.emit(__file__, a, clock.summary(), samples_per_step=a.batch)
