"""A plain training loop prepared by Hugging Face accelerate (Accelerator, accelerator.backward), GPT-2 124M with
random weights on random token ids, launched as a first-time user does: no mixed precision.
Follow the advice: --mixed-precision bf16 (Accelerator(mixed_precision="bf16"), what `accelerate launch
--mixed_precision bf16` sets)."""
import argparse

import torch
from accelerate import Accelerator
from transformers import GPT2Config, GPT2LMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("--mixed-precision", default="no")
ap.add_argument("--steps", type=int, default=60)
a = ap.parse_args()

acc = Accelerator(mixed_precision=a.mixed_precision)
model = GPT2LMHeadModel(GPT2Config())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.utils.data.TensorDataset(torch.randint(0, 50257, (16 * 80, 512)))
loader = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True)
model, opt, loader = acc.prepare(model, opt, loader)
model.train()
for step, (ids,) in enumerate(loader):
    loss = model(input_ids=ids, labels=ids).loss
    acc.backward(loss)
    opt.step()
    opt.zero_grad()
    if step + 1 >= a.steps:
        break
