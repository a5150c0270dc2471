"""GPT-2 small (random weights, transformers' GPT2Config()) trained on random token ids: the model of
examples/doctor/whatif_check.sh, which checks doctor's largest-batch what-if against real runs.

    gpuwise doctor --steps 12 -- python examples/doctor/gpt2_train.py --batch-size 8
    python examples/doctor/gpt2_train.py --batch-size 40 --steps 4 --report-peak   # fits? prints the peak

bf16 autocast (fp32 weights), AdamW, sequence 1024, a DataLoader of dict batches {"input_ids": [B, seq]}.
With --report-peak the script prints `peak_alloc_bytes N` after the steps, or `OOM` and exits 3 when a step
runs out of memory. It needs no network (the config is built in code) and knows nothing of gpuwise.
"""
import argparse
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class RandomTokens(Dataset):
    def __init__(self, n, seq, vocab):
        self.n, self.seq, self.vocab = n, seq, vocab

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(0, self.vocab, (self.seq,), generator=g)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--precision", default="amp-bf16", choices=["amp-bf16", "fp32"])
    ap.add_argument("--report-peak", action="store_true")
    args = ap.parse_args()

    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_positions=max(1024, args.seq))
    model = GPT2LMHeadModel(cfg).cuda()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = RandomTokens(args.batch_size * (args.steps + 1), args.seq, cfg.vocab_size)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False, num_workers=2, pin_memory=True, drop_last=True)
    amp = args.precision == "amp-bf16"
    step = 0
    try:
        while step < args.steps:
            for batch in loader:
                x = batch["input_ids"].cuda(non_blocking=True)
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                    loss = model(input_ids=x, labels=x).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                step += 1
                if step >= args.steps:
                    break
        torch.cuda.synchronize()
    except torch.cuda.OutOfMemoryError:
        if args.report_peak:
            print("OOM", flush=True)
            sys.exit(3)
        raise
    if args.report_peak:
        print(f"peak_alloc_bytes {torch.cuda.max_memory_allocated()}", flush=True)
        print(f"peak_reserved_bytes {torch.cuda.max_memory_reserved()}", flush=True)
    print(f"gpt2_train: done after {step} steps, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
