"""Hugging Face Trainer fine-tuning a GPT-2 (124M, random weights: no hub access) on random token ids,
with TrainingArguments as a first-time user writes them: fp32, no compile.
Follow the advice: --bf16 (TrainingArguments(bf16=True)), --compile (torch_compile=True)."""
import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

ap = argparse.ArgumentParser()
ap.add_argument("--bf16", action="store_true")
ap.add_argument("--compile", action="store_true")
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--out", default="/tmp/hf_trainer_out")
a = ap.parse_args()


class RandomTokens(torch.utils.data.Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 50257, (512,), generator=g)
        return {"input_ids": ids, "labels": ids}


model = GPT2LMHeadModel(GPT2Config())
args = TrainingArguments(
    output_dir=a.out,
    per_device_train_batch_size=16,
    max_steps=a.steps,
    learning_rate=3e-4,
    logging_steps=20,
    save_strategy="no",
    report_to=[],
    bf16=a.bf16,
    torch_compile=a.compile,
    dataloader_num_workers=2,
)
Trainer(model=model, args=args, train_dataset=RandomTokens()).train()
