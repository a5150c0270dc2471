"""torchvision reference-style image training on one GPU, with the model wrapped in nn.DataParallel as those scripts
do whatever the GPU count, fp32, SGD with momentum, images from a DataLoader over pre-made tensors.
Follow the advice: --amp --channels-last."""
import argparse

import torch
import torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--amp", action="store_true")
ap.add_argument("--channels-last", action="store_true")
ap.add_argument("--steps", type=int, default=60)
a = ap.parse_args()

fmt = torch.channels_last if a.channels_last else torch.contiguous_format
model = torch.nn.DataParallel(torchvision.models.resnet50().cuda().to(memory_format=fmt))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
images = torch.utils.data.TensorDataset(torch.randn(512, 3, 224, 224), torch.randint(0, 1000, (512,)))
loader = torch.utils.data.DataLoader(images, batch_size=128, shuffle=True, num_workers=2, pin_memory=True, drop_last=True)
step = 0
while step < a.steps:
    for x, y in loader:
        x = x.cuda(non_blocking=True).to(memory_format=fmt)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step >= a.steps:
            break
