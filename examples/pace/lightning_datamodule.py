"""A LightningDataModule over a memory-mapped uint8 image array (8,192 images 3x232x232 in a .npy file, opened
lazily in each worker), random 224 crop, flip, and the float conversion and normalisation done in numpy in
the workers (so each batch of 128 crosses to the main process as 77 MB of float32), 2 workers, no pinned
memory; a LightningModule around a torchvision ResNet-50 with SGD; Trainer.fit(max_steps=...) at the
default precision ("32-true"), self.log of the loss every step.

Each fix is the Trainer's or the DataModule's own switch: --precision bf16-mixed, --workers N (the
DataModule's num_workers), --pin-memory, --persistent-workers, --prefetch-factor N, --channels-last,
--compile, --batch N."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=200)
H.loader_flags(ap, workers=2)
ap.add_argument("--precision", default="32-true", help='Trainer(precision=...): "32-true" (default), "bf16-mixed"')
ap.add_argument("--channels-last", action="store_true")
ap.add_argument("--compile", action="store_true", help="torch.compile the LightningModule")
ap.add_argument("--batch", type=int, default=128)
a = H.parse(ap)
H.require(__file__, "torchvision")
try:  # the unified package first, then the standalone one, as users have either
    import lightning as L
except ImportError:
    try:
        import pytorch_lightning as L
    except ImportError:
        H.skip(__file__, f"needs lightning (or pytorch_lightning), not importable by {sys.executable}")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402

import make_data  # noqa: E402

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1) * 255
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1) * 255


class MemmapImages(torch.utils.data.Dataset):
    def __init__(self, images_path, labels_path, crop):
        self.images_path, self.crop = images_path, crop
        self.labels = np.load(labels_path)
        self.images = None  # opened in each worker: a memmap does not survive pickling to a spawned worker

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        if self.images is None:
            self.images = np.load(self.images_path, mmap_mode="r")
        img = self.images[i]
        side = img.shape[-1]
        y, x = np.random.randint(0, side - self.crop + 1, size=2)
        img = img[:, y : y + self.crop, x : x + self.crop]
        if np.random.rand() < 0.5:
            img = img[:, :, ::-1]
        img = (img.astype(np.float32) - MEAN) / STD
        return torch.from_numpy(np.ascontiguousarray(img)), int(self.labels[i])


class MemmapImageDataModule(L.LightningDataModule):
    def __init__(self, data_dir, smoke=False, batch_size=128, num_workers=2, pin_memory=False, persistent_workers=False, prefetch_factor=None):
        super().__init__()
        self.save_hyperparameters()

    def prepare_data(self):
        make_data.ensure_images(self.hparams.data_dir, self.hparams.smoke)

    def setup(self, stage=None):
        images, labels, self.num_classes = make_data.ensure_images(self.hparams.data_dir, self.hparams.smoke)
        self.train_set = MemmapImages(images, labels, crop=32 if self.hparams.smoke else 224)

    def train_dataloader(self):
        h = self.hparams
        ahead = {"prefetch_factor": h.prefetch_factor} if h.num_workers > 0 and h.prefetch_factor else {}
        return torch.utils.data.DataLoader(
            self.train_set, batch_size=h.batch_size, shuffle=True, drop_last=True, num_workers=h.num_workers,
            pin_memory=h.pin_memory, persistent_workers=h.persistent_workers and h.num_workers > 0, **ahead,
        )


class LitResNet(L.LightningModule):
    def __init__(self, num_classes=10, lr=0.1, channels_last=False):
        super().__init__()
        self.save_hyperparameters()
        self.net = torchvision.models.resnet50(num_classes=num_classes)
        if channels_last:
            self.net = self.net.to(memory_format=torch.channels_last)

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.hparams.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9, weight_decay=1e-4)


class StepClockCallback(L.Callback):
    """The corpus's step clock on Lightning's own hooks."""

    def __init__(self, dev):
        self.dev = dev
        self.clock = None

    def on_train_start(self, trainer, pl_module):
        self.clock = H.StepClock(self.dev, a.warmup)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.clock.tick(batch[0].shape[0])
        if self.clock.steps % a.log_every == 0:
            H.progress(self.clock, a.steps, loss=float(outputs["loss"]))


dev = H.device(a)
if a.smoke:
    a.batch = min(a.batch, 4)
dm = MemmapImageDataModule(a.data, a.smoke, a.batch, a.workers, a.pin_memory and dev.type == "cuda", a.persistent_workers, a.prefetch_factor)
dm.prepare_data()
model = LitResNet(num_classes=make_data.ensure_images(a.data, a.smoke)[2], channels_last=a.channels_last)
if a.compile:
    model = H.compile_model(model)
clock_cb = StepClockCallback(dev)
trainer = L.Trainer(
    accelerator="gpu" if dev.type == "cuda" else "cpu", devices=1, max_steps=a.steps, precision=a.precision,
    logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    callbacks=[clock_cb],
)
trainer.fit(model, datamodule=dm)
H.emit(__file__, a, clock_cb.clock.summary(), samples_per_step=a.batch, images=len(dm.train_set))
