"""A ResNet-50 trained the timm way over the JPEG folder: timm.create_model (random init), the data config
resolved from the model (resolve_data_config) and timm's training transform (create_transform: bicubic
RandomResizedCrop, flip, ColorJitter 0.4, ToTensor, Normalize) over timm's ImageDataset, 4 workers, batch 128,
bf16 autocast, create_optimizer_v2 (SGD, nesterov), a cosine scheduler stepped every update, label smoothing,
and the loss read every step into an average (loss.item(), as timm's train.py does without distributed).
Heavier per image than jpeg_resnet (bicubic resize and colour jitter) and bf16 already on: the loader binds
further.

Each fix is a flag: --workers N, --pin-memory, --persistent-workers, --prefetch-factor N, --amp bf16|none,
--channels-last, --compile, --batch N, --steps N."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=150)
H.loader_flags(ap, workers=4)
H.model_flags(ap, amp="bf16")
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--model", default="resnet50")
ap.add_argument("--lr", type=float, default=0.2)
ap.add_argument("--sync-every", type=int, default=1, help="read the loss (loss.item(), a sync) every N steps (timm's train.py: 1)")
a = H.parse(ap)
H.require(__file__, "timm", "torchvision", "PIL")

import timm  # noqa: E402
import torch  # noqa: E402
from timm.data import create_dataset, create_transform, resolve_data_config  # noqa: E402
from timm.loss import LabelSmoothingCrossEntropy  # noqa: E402
from timm.optim import create_optimizer_v2  # noqa: E402
from timm.scheduler import create_scheduler_v2  # noqa: E402

import make_data  # noqa: E402

dev = H.device(a)
if a.smoke:
    a.batch = min(a.batch, 4)
model = timm.create_model(a.model, pretrained=False, num_classes=10).to(dev)
if a.channels_last:
    model = model.to(memory_format=torch.channels_last)
data_config = resolve_data_config({}, model=model)
if a.smoke:
    data_config["input_size"] = (3, 32, 32)
dataset = create_dataset("", root=make_data.ensure_jpeg(a.data, a.smoke), split="train", is_training=True)
dataset.transform = create_transform(**data_config, is_training=True)
loader = torch.utils.data.DataLoader(dataset, batch_size=a.batch, shuffle=True, drop_last=True, **H.loader_kwargs(a, dev))

optimizer = create_optimizer_v2(model, opt="sgd", lr=a.lr, weight_decay=2e-5, momentum=0.9)
updates_per_epoch = len(loader)
lr_scheduler, epochs = create_scheduler_v2(
    optimizer, sched="cosine", num_epochs=max(1, math.ceil(a.steps / updates_per_epoch)), warmup_epochs=1,
    warmup_lr=1e-4, updates_per_epoch=updates_per_epoch, step_on_epochs=False,
)
loss_fn = LabelSmoothingCrossEntropy(smoothing=0.1).to(dev)
if a.compile:
    model = H.compile_model(model, a.compile_mode)


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n):
        self.sum += value * n
        self.count += n


clock = H.StepClock(dev, a.warmup)
losses = AverageMeter()
num_updates = 0
for epoch in range(epochs):
    model.train()
    for input, target in loader:
        input, target = input.to(dev, non_blocking=a.pin_memory), target.to(dev, non_blocking=a.pin_memory)
        if a.channels_last:
            input = input.contiguous(memory_format=torch.channels_last)
        with H.autocast(a.amp, dev):
            output = model(input)
            loss = loss_fn(output, target)
        if clock.steps % a.sync_every == 0:
            losses.update(loss.item(), input.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        num_updates += 1
        lr_scheduler.step_update(num_updates=num_updates)
        clock.tick(input.size(0))
        if clock.steps % a.log_every == 0:
            H.progress(clock, a.steps, loss=losses.sum / losses.count if losses.count else float("nan"), lr=optimizer.param_groups[0]["lr"])
        if clock.steps >= a.steps:
            break
    lr_scheduler.step(epoch + 1)
    if clock.steps >= a.steps:
        break
H.emit(__file__, a, clock.summary(), samples_per_step=a.batch, images=len(dataset))
