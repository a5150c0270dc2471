"""A Hugging Face Trainer run as a first-time user writes it: GPT-2 124M from its config (random weights: no hub
access) on random token windows of 512, per-device batch 16, TrainingArguments in fp32 with 2 DataLoader workers,
no compile. The step clock is a TrainerCallback (on_step_end), so the script's JSON line measures the Trainer's
own optimizer steps.

Each fix is a flag that maps onto TrainingArguments: --bf16 (bf16=True), --compile (torch_compile=True),
--workers N (dataloader_num_workers), --batch N, and the harness's --tf32 and --cudnn-benchmark. Pinned memory is
the Trainer's default (dataloader_pin_memory=True) and stays so."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=80, warmup=10, log_every=20)
ap.add_argument("--bf16", action="store_true", help="TrainingArguments(bf16=True)")
ap.add_argument("--compile", action="store_true", help="TrainingArguments(torch_compile=True)")
ap.add_argument("--workers", type=int, default=2, help="TrainingArguments(dataloader_num_workers=N)")
ap.add_argument("--batch", type=int, default=16, help="per_device_train_batch_size")
ap.add_argument("--seq", type=int, default=512)
a = H.parse(ap)
H.require(__file__, "transformers")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402

dev = H.device(a)
seq = 32 if a.smoke else a.seq
config = GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=seq) if a.smoke else GPT2Config(n_positions=max(1024, seq))


class RandomTokens(torch.utils.data.Dataset):
    """Token windows drawn per index (a tokenised corpus's cost without its download)."""

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, config.vocab_size, (seq,), generator=g)
        return {"input_ids": ids, "labels": ids}


class Clock(TrainerCallback):
    def __init__(self):
        self.clock = None

    def on_train_begin(self, args, state, control, **kw):
        self.clock = H.StepClock(dev, a.warmup)

    def on_step_end(self, args, state, control, **kw):
        self.clock.tick(a.batch)
        if self.clock.steps % a.log_every == 0:
            H.progress(self.clock, a.steps)


clock = Clock()
args = TrainingArguments(
    output_dir=os.path.join("/tmp", "hf_trainer_pace_%d" % os.getpid()),
    per_device_train_batch_size=a.batch,
    max_steps=a.steps,
    learning_rate=3e-4,
    logging_steps=20,
    save_strategy="no",
    report_to=[],
    bf16=a.bf16,
    torch_compile=a.compile,
    dataloader_num_workers=a.workers,
    use_cpu=dev.type == "cpu",
)
Trainer(model=GPT2LMHeadModel(config), args=args, train_dataset=RandomTokens(), callbacks=[clock]).train()
H.emit(__file__, a, clock.clock.summary())
