"""PyTorch Lightning Trainer.fit on a torchvision ResNet-50 with synthetic 224x224 images, default
precision (32-true). Follow the advice: --precision bf16-mixed, --channels-last."""
import argparse

import lightning as L
import torch
import torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--precision", default="32-true")
ap.add_argument("--channels-last", action="store_true")
ap.add_argument("--steps", type=int, default=60)
a = ap.parse_args()


class Images(torch.utils.data.Dataset):
    def __init__(self, n=128 * 200):
        self.n = n
        self.x = torch.randn(64, 3, 224, 224)  # a small pool, indexed: the loader costs nothing

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.x[i % 64], i % 1000


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet50()
        if a.channels_last:
            self.net = self.net.to(memory_format=torch.channels_last)

    def training_step(self, batch, _):
        x, y = batch
        if a.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)


loader = torch.utils.data.DataLoader(Images(), batch_size=128, num_workers=4, pin_memory=True, persistent_workers=True)
trainer = L.Trainer(max_steps=a.steps, precision=a.precision, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Classifier(), loader)
