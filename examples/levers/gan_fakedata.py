"""A DCGAN (64x64, generator and discriminator of transposed/strided convolutions with batch norm) trained on
torchvision's FakeData(size=1000, image_size=(3, 64, 64)) in batches of 64 with 2 workers, two Adam
optimizers (discriminator, then generator), fp32, and the losses and D(x), D(G(z)) read with .item() every
iteration as the well-known DCGAN example prints them. 1000 = 15 x 64 + 40: every epoch ends with a batch of
40. Issue 26's batch case: the report called this "batch 40" and scaled its what-ifs from it. An epoch is 16
iterations, and the workers start again at each one.

Flags: --drop-last (DataLoader(drop_last=True): 15 full batches an epoch), --workers N, --persistent-workers,
--pin-memory, --prefetch-factor N, --batch N, --steps N (iterations)."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "pace"))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=400, log_every=50)
H.loader_flags(ap, workers=2)
ap.add_argument("--drop-last", action="store_true")
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--images", type=int, default=1000)
a = H.parse(ap, smoke_steps=8)
H.require(__file__, "torchvision", "PIL")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torchvision import datasets, transforms  # noqa: E402

NZ, NGF, NDF = 100, 64, 64
dev = H.device(a)
side = 64
if a.smoke:
    a.batch, a.images = min(a.batch, 4), 18  # 18 = 4 x 4 + 2: the partial batch again
    NGF = NDF = 8


def up(cin, cout, first=False):
    return [nn.ConvTranspose2d(cin, cout, 4, 1 if first else 2, 0 if first else 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)]


def down(cin, cout, norm=True):
    return [nn.Conv2d(cin, cout, 4, 2, 1, bias=False), *([nn.BatchNorm2d(cout)] if norm else []), nn.LeakyReLU(0.2, inplace=True)]


generator = nn.Sequential(  # z [N, 100, 1, 1] -> [N, 3, 64, 64]
    *up(NZ, NGF * 8, first=True), *up(NGF * 8, NGF * 4), *up(NGF * 4, NGF * 2), *up(NGF * 2, NGF),
    nn.ConvTranspose2d(NGF, 3, 4, 2, 1, bias=False), nn.Tanh(),
).to(dev)
discriminator = nn.Sequential(  # [N, 3, 64, 64] -> [N]
    *down(3, NDF, norm=False), *down(NDF, NDF * 2), *down(NDF * 2, NDF * 4), *down(NDF * 4, NDF * 8),
    nn.Conv2d(NDF * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid(), nn.Flatten(0),
).to(dev)


def init_weights(m):
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


generator.apply(init_weights)
discriminator.apply(init_weights)

dataset = datasets.FakeData(
    size=a.images, image_size=(3, side, side), num_classes=10,
    transform=transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))]),
)
loader = torch.utils.data.DataLoader(dataset, batch_size=a.batch, shuffle=True, drop_last=a.drop_last, **H.loader_kwargs(a, dev))
criterion = nn.BCELoss()
opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
fixed_noise = torch.randn(64, NZ, 1, 1, device=dev)

clock = H.StepClock(dev, a.warmup)
epoch = 0
while clock.steps < a.steps:
    for i, (real, _) in enumerate(loader):
        real = real.to(dev, non_blocking=a.pin_memory)
        n = real.size(0)
        # discriminator: real images labelled 1, generated ones 0
        discriminator.zero_grad()
        out = discriminator(real)
        err_d_real = criterion(out, torch.full((n,), 1.0, device=dev))
        err_d_real.backward()
        d_x = out.mean().item()
        fake = generator(torch.randn(n, NZ, 1, 1, device=dev))
        out = discriminator(fake.detach())
        err_d_fake = criterion(out, torch.full((n,), 0.0, device=dev))
        err_d_fake.backward()
        d_g_z1 = out.mean().item()
        err_d = err_d_real + err_d_fake
        opt_d.step()
        # generator: make the discriminator say 1
        generator.zero_grad()
        out = discriminator(fake)
        err_g = criterion(out, torch.full((n,), 1.0, device=dev))
        err_g.backward()
        d_g_z2 = out.mean().item()
        opt_g.step()
        clock.tick(n)
        if clock.steps % a.log_every == 0:
            H.progress(clock, a.steps, epoch=epoch, batch=n, loss_d=err_d.item(), loss_g=err_g.item(), d_x=d_x, d_g_z1=d_g_z1, d_g_z2=d_g_z2)
        if clock.steps >= a.steps:
            break
    epoch += 1
full = a.images // a.batch
H.emit(__file__, a, clock.summary(), samples_per_step=a.batch, epochs=epoch,
       batches_per_epoch=full if a.drop_last else -(-a.images // a.batch), last_batch=None if a.drop_last else (a.images % a.batch or None))
