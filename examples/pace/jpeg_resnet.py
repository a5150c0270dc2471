"""ResNet-50 trained on a folder of JPEGs the torchvision way: ImageFolder, RandomResizedCrop(224), flip,
ToTensor and Normalize in 4 DataLoader workers, batch 64, SGD with momentum, fp32, loss.item() every 10
steps. Issue 25's first case: the workers cannot decode fast enough and the loop stalls every few steps.

Each fix is a flag: --workers N, --pin-memory, --persistent-workers, --prefetch-factor N, --amp bf16,
--channels-last, --compile [--compile-mode reduce-overhead], --drop-last, --batch N, --steps N. The data (4,000 JPEGs
of about 500x375, 10 classes) is made by make_data.py when absent."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=200)
H.loader_flags(ap, workers=4)
H.model_flags(ap)
ap.add_argument("--drop-last", action="store_true", help="DataLoader(drop_last=True): no partial batch at the epoch's end")
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--lr", type=float, default=0.1)
a = H.parse(ap)
H.require(__file__, "torchvision", "PIL")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from torchvision import datasets, transforms  # noqa: E402

import make_data  # noqa: E402

dev = H.device(a)
if a.smoke:
    a.batch = min(a.batch, 4)
crop = 32 if a.smoke else 224
normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
train_set = datasets.ImageFolder(
    make_data.ensure_jpeg(a.data, a.smoke),
    transforms.Compose([transforms.RandomResizedCrop(crop), transforms.RandomHorizontalFlip(), transforms.ToTensor(), normalize]),
)
loader = torch.utils.data.DataLoader(train_set, batch_size=a.batch, shuffle=True, drop_last=a.drop_last, **H.loader_kwargs(a, dev))

model = torchvision.models.resnet50(num_classes=len(train_set.classes)).to(dev)
if a.channels_last:
    model = model.to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
if a.compile:
    model = H.compile_model(model, a.compile_mode)
model.train()

clock = H.StepClock(dev, a.warmup)
for images, target in H.forever(loader):
    images = images.to(dev, non_blocking=a.pin_memory)
    target = target.to(dev, non_blocking=a.pin_memory)
    if a.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    with H.autocast(a.amp, dev):
        loss = F.cross_entropy(model(images), target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    clock.tick(images.shape[0])
    if clock.steps % 10 == 0:
        value = loss.item()  # the torchvision reference script's logging: a sync every 10 steps
        if clock.steps % a.log_every == 0:
            H.progress(clock, a.steps, loss=value)
    if clock.steps >= a.steps:
        break
H.emit(__file__, a, clock.summary(), samples_per_step=a.batch, images=len(train_set))
