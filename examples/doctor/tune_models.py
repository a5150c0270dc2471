"""Real models for checking `gpuwise tune` on a GPU: GPT-2 small (transformers' GPT2Config() with random weights,
sequence 1024, AdamW, bf16 autocast) or a torchvision ResNet-50 (random 224x224 images, SGD with momentum, bf16
autocast). Data are random and made on the GPU; a DataLoader hands out the batch's shape (GPT-2: a dict of
`input_ids`), so the probe counts samples and tokens. No internet needed.

    gpuwise tune --param batch_size=1..512 -- python examples/doctor/tune_models.py --model gpt2 --batch-size {batch_size}
    python examples/doctor/tune_models.py --model resnet50 --batch-size 512 --steps 4 --oom-exit-code 3

With --oom-exit-code, an out-of-memory error is caught and the script exits with that code (the reference search
of tune_check.py, without gpuwise); otherwise it propagates as usual.
"""
import argparse
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Shapes(Dataset):
    """Sample i: GPT-2 a dict of token ids (made small on the host; the real batch is made on the GPU), ResNet an index."""

    def __init__(self, n, seq):
        self.n, self.seq = n, seq

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.seq:
            return {"input_ids": torch.zeros(self.seq, dtype=torch.long)}
        return torch.tensor(i)


def build(name):
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(GPT2Config()).cuda()
        return model, torch.optim.AdamW(model.parameters(), lr=1e-4), 1024
    import torchvision

    model = torchvision.models.resnet50(weights=None).cuda()
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["gpt2", "resnet50"], required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--oom-exit-code", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(0)
    model, opt, seq = build(args.model)
    b = args.batch_size
    loader = DataLoader(Shapes(b * args.steps, seq), batch_size=b)
    try:
        for step, batch in enumerate(loader, 1):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                if seq:
                    ids = torch.randint(0, model.config.vocab_size, batch["input_ids"].shape, device="cuda")
                    loss = model(input_ids=ids, labels=ids).loss
                else:
                    x = torch.randn(b, 3, 224, 224, device="cuda")
                    y = torch.randint(0, 1000, (b,), device="cuda")
                    loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
    except (torch.cuda.OutOfMemoryError, RuntimeError) as e:
        # cuBLAS/cuDNN report a failed workspace allocation as STATUS_ALLOC_FAILED: out of memory too.
        oom = isinstance(e, torch.cuda.OutOfMemoryError) or "STATUS_ALLOC_FAILED" in str(e)
        if not args.oom_exit_code or not oom:
            raise
        print("tune_models: out of memory at batch %d" % b, flush=True)
        sys.exit(args.oom_exit_code)
    print("tune_models: %s batch %d ran %d steps, peak allocated %.2f GiB" % (args.model, b, step, torch.cuda.max_memory_allocated() / 2**30), flush=True)


if __name__ == "__main__":
    main()
