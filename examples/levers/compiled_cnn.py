"""A ResNet-50 written out by hand (bottleneck blocks, batch norm, [3, 4, 6, 3] stages) that is already
compiled: torch.compile(model), bf16 autocast, channels_last, SGD with momentum and nesterov, batch 128 drawn
from a pool of images held on the GPU (random indices and flips there: no loader to wait for). Issue 26's
compile case: doctor must not recommend compile again, and where it speaks of compile for CNNs it must not
promise what the GPU did not give (compile measured little on CNNs).

Flags: --no-compile (the eager twin, to measure what compile gave), --compile-mode reduce-overhead (doctor's CUDA
graphs fix), --batch N, --steps N."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "pace"))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=300, warmup=30)
ap.add_argument("--no-compile", action="store_true")
ap.add_argument("--compile-mode", choices=["default", "reduce-overhead"], default="default")
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--pool", type=int, default=256, help="distinct images held on the device")
a = H.parse(ap)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, stages=(3, 4, 6, 3), widths=(64, 128, 256, 512), classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], widths[0]
        for i, (n, w) in enumerate(zip(stages, widths)):
            for j in range(n):
                blocks.append(Bottleneck(cin, w, 2 if j == 0 and i > 0 else 1))
                cin = w * Bottleneck.expansion
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


dev = H.device(a)
side, kw = 224, {}
if a.smoke:
    a.batch, a.pool, side = min(a.batch, 4), 8, 32
    kw = {"stages": (1, 1, 1, 1), "widths": (8, 16, 32, 64), "classes": 10}
model = ResNet(**kw).to(dev).to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5)
if not a.no_compile:
    model = H.compile_model(model, mode=None if a.compile_mode == "default" else a.compile_mode)
g = torch.Generator(device=dev).manual_seed(0)
pool = torch.randn(a.pool, 3, side, side, device=dev, generator=g).contiguous(memory_format=torch.channels_last)
labels = torch.randint(0, kw.get("classes", 1000), (a.pool,), device=dev, generator=g)

clock = H.StepClock(dev, a.warmup)
for step in range(a.steps):
    idx = torch.randint(0, a.pool, (a.batch,), device=dev, generator=g)
    x = pool[idx]
    flip = torch.rand(a.batch, 1, 1, 1, device=dev, generator=g) < 0.5
    x = torch.where(flip, x.flip(-1), x)
    with H.autocast("bf16", dev):
        loss = F.cross_entropy(model(x), labels[idx])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    clock.tick(a.batch)
    if clock.steps % a.log_every == 0:
        H.progress(clock, a.steps, loss=loss.item())
H.emit(__file__, a, clock.summary(), samples_per_step=a.batch, compiled=not a.no_compile and hasattr(torch, "compile"))
