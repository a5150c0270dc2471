#!/usr/bin/env python3
"""Measure GPU memory and step time of real training/inference runs for the gpuwise planner's accuracy harness.

Follows the protocol of the committed ground truth (test/fixtures/planner/memory-calibration.jsonl):
random weights built on the GPU from a config.json, fresh random batch per step, forward
(`model(input_ids=x, labels=x).loss`), backward, optimizer step, zero_grad(set_to_none=True); four steps with
`torch.cuda.reset_peak_memory_stats()` right before step 4. Inference rows: eval + inference_mode, peak of the
4th forward. Largest batch under a cap: `set_per_process_memory_fraction(cap / total)`, doubling then bisecting,
two training steps per trial. Multi-GPU (under torchrun): DDP (default 25 MB buckets) and FSDP2 (`fully_shard` on
every block then the root, MixedPrecisionPolicy(bf16 params, fp32 reduce)); per-rank peaks, the maximum over ranks
is recorded.

Usage (from the repository root):
  python bench/memory/measure.py single OUT_DIR [--part I/N]     # single-GPU rows -> OUT_DIR/single-I.jsonl
  torchrun --nproc_per_node=2 bench/memory/measure.py dist OUT_DIR  # DDP and FSDP2 rows -> OUT_DIR/dist.jsonl
Derived configs (fewer layers, bigger widths) are written to OUT_DIR/configs/<name>/config.json; commit them
into test/fixtures/planner/configs/ together with the JSONL so the harness can rebuild each model.
"""

import argparse
import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "test" / "fixtures" / "planner" / "configs"

# name -> (base config folder, overrides). Fewer layers keep big families on one GPU and the batch quick;
# the planner sees exactly these configs.
MODELS = {
    "gpt2": ("gpt2", {}),
    "gpt2-medium": ("gpt2", {"n_embd": 1024, "n_layer": 24, "n_head": 16}),
    "bert-base": ("bert-base", {}),
    "bert-large": ("bert-base", {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}),
    "qwen2-0.5b": ("qwen2-0.5b", {}),
    "llama-2-7b-4l": ("llama-2-7b", {"num_hidden_layers": 4}),
    "mistral-7b-4l": ("mistral-7b", {"num_hidden_layers": 4}),
    "llama-3-8b-2l": ("llama-3-8b", {"num_hidden_layers": 2}),
    "mixtral-8x7b-2l": ("mixtral-8x7b", {"num_hidden_layers": 2}),
}

# Single-GPU cases: (model, mode, seq, batch, prec, opt, ckpt). opt "sgd" = SGD(momentum=0.9) as in the protocol.
SINGLE = [
    ("qwen2-0.5b", "train", 1024, 4, "amp_bf16", "adamw", False),
    ("qwen2-0.5b", "train", 1024, 4, "bf16", "adamw", False),
    ("qwen2-0.5b", "train", 2048, 4, "amp_bf16", "adamw", True),
    ("llama-2-7b-4l", "train", 2048, 2, "amp_bf16", "adamw", False),
    ("llama-2-7b-4l", "train", 2048, 4, "bf16", "adamw", False),
    ("llama-2-7b-4l", "train", 1024, 4, "fp32", "sgd", False),
    ("mistral-7b-4l", "train", 2048, 2, "amp_bf16", "adamw", False),
    ("llama-3-8b-2l", "train", 2048, 2, "bf16", "adamw", True),
    ("mixtral-8x7b-2l", "train", 1024, 2, "bf16", "adamw", False),
    ("gpt2-medium", "train", 1024, 8, "amp_bf16", "adamw", False),
    ("bert-large", "train", 512, 16, "amp_bf16", "adamw", False),
    ("gpt2", "train", 512, 32, "amp_bf16", "adamw", False),
    ("llama-2-7b-4l", "infer", 2048, 8, "bf16", None, False),
    ("qwen2-0.5b", "infer", 1024, 16, "amp_bf16", None, False),
    ("gpt2", "infer", 1024, 32, "fp32", None, False),
]
# Largest batch under a cap: (model, seq, prec, opt, ckpt, cap GiB).
MAX_BATCH = [
    ("qwen2-0.5b", 1024, "amp_bf16", "adamw", False, 24),
    ("gpt2-medium", 1024, "amp_bf16", "adamw", False, 16),
]
# Two-GPU cases: (model, strategy, seq, batch, ckpt, reshard_after_forward). All amp_bf16 / bf16-mixed, AdamW.
DIST = [
    ("qwen2-0.5b", "ddp", 1024, 4, False, None),
    ("llama-2-7b-4l", "ddp", 2048, 2, False, None),
    ("llama-2-7b-4l", "fsdp", 2048, 2, False, True),
    ("llama-2-7b-4l", "fsdp", 2048, 2, False, False),
    ("qwen2-0.5b", "fsdp", 1024, 4, True, True),
    ("gpt2-medium", "fsdp", 1024, 8, False, True),
]


def write_config(name, out_dir):
    base, overrides = MODELS[name]
    cfg = json.loads((CONFIGS / base / "config.json").read_text())
    cfg.update(overrides)
    d = Path(out_dir) / "configs" / name
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f"config.json.{os.getpid()}"
    tmp.write_text(json.dumps(cfg, indent=2) + "\n")
    os.replace(tmp, d / "config.json")  # atomic: parallel runs share the folder
    return d


def build(name, out_dir, torch, transformers):
    d = write_config(name, out_dir)
    cfg = transformers.AutoConfig.from_pretrained(str(d))
    with torch.device("cuda"):
        if cfg.model_type == "bert":
            model = transformers.BertForMaskedLM(cfg)
        else:
            model = transformers.AutoModelForCausalLM.from_config(cfg)
    model = model.float()  # configs may name bf16; the protocol builds fp32 and casts explicitly
    return model, cfg


def blocks_of(model, cfg):
    if cfg.model_type == "gpt2":
        return model.transformer.h
    if cfg.model_type == "bert":
        return model.bert.encoder.layer
    return model.model.layers


def nvml_used(torch):
    """This process's GPU memory as nvidia-smi shows it (falls back to device-wide used memory)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        idx = torch.cuda.current_device()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible:
            idx = int(visible.split(",")[idx])
        h = pynvml.nvmlDeviceGetHandleByIndex(idx)
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
            if p.pid == os.getpid() and p.usedGpuMemory:
                return int(p.usedGpuMemory)
    except Exception:
        pass
    free, total = torch.cuda.mem_get_info()
    return int(total - free)


def make_optimizer(torch, model, opt):
    if opt == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-4)
    return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)


def train_step(torch, model, opt, cfg, batch, seq, prec):
    x = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    if prec == "amp_bf16":
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
    else:
        loss = model(input_ids=x, labels=x).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def base_row(torch, name, model, cfg):
    return {
        "model": name,
        "model_type": cfg.model_type,
        "params": sum(p.numel() for p in model.parameters()),
        "mem_model": sum(p.numel() * p.element_size() for p in model.parameters()),
        "attn_impl": getattr(cfg, "_attn_implementation", None),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
    }


def measure_single(torch, transformers, case, out_dir):
    name, mode, seq, batch, prec, opt_name, ckpt = case
    t0 = time.time()
    model, cfg = build(name, out_dir, torch, transformers)
    if prec == "bf16":
        model = model.to(torch.bfloat16)
    row = {**base_row(torch, name, model, cfg), "mode": mode, "seq": seq, "batch": batch, "prec": prec, "opt": opt_name or "none", "ckpt": ckpt}
    times = []
    if mode == "infer":
        model.eval()
        with torch.inference_mode():
            for i in range(4):
                x = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
                if i == 3:
                    torch.cuda.synchronize()
                    row["alloc_before_step"] = torch.cuda.memory_allocated()
                    torch.cuda.reset_peak_memory_stats()
                torch.cuda.synchronize()
                s = time.perf_counter()
                if prec == "amp_bf16":
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        logits = model(input_ids=x).logits
                else:
                    logits = model(input_ids=x).logits
                torch.cuda.synchronize()
                times.append(time.perf_counter() - s)
                del logits
        row["peak_alloc_first_step"] = None
    else:
        model.train()
        if ckpt:
            model.gradient_checkpointing_enable()
        opt = make_optimizer(torch, model, opt_name)
        torch.cuda.reset_peak_memory_stats()  # step 1's peak without the model build
        for i in range(4):
            if i == 3:
                torch.cuda.synchronize()
                row["alloc_before_step"] = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
            torch.cuda.synchronize()
            s = time.perf_counter()
            train_step(torch, model, opt, cfg, batch, seq, prec)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - s)
            if i == 0:
                row["peak_alloc_first_step"] = torch.cuda.max_memory_allocated()
    row["peak_alloc_step"] = torch.cuda.max_memory_allocated()
    row["peak_reserved"] = torch.cuda.max_memory_reserved()
    row["reserved"] = torch.cuda.memory_reserved()
    row["nvml_proc_used"] = nvml_used(torch)
    row["step_s"] = sorted(times[1:])[1]
    row["ok"] = True
    row["wall_s"] = round(time.time() - t0, 2)
    # Self-checks: the steady peak covers what was resident, and reserved covers allocated.
    assert row["peak_alloc_step"] >= row["alloc_before_step"], row
    assert row["peak_reserved"] >= row["peak_alloc_step"], row
    return row


def measure_max_batch(torch, transformers, case, out_dir):
    name, seq, prec, opt_name, ckpt, cap_gib = case
    t0 = time.time()
    model, cfg = build(name, out_dir, torch, transformers)
    if prec == "bf16":
        model = model.to(torch.bfloat16)
    model.train()
    if ckpt:
        model.gradient_checkpointing_enable()
    opt = make_optimizer(torch, model, opt_name)
    total = torch.cuda.get_device_properties(0).total_memory
    cap = cap_gib * 1024**3
    torch.cuda.set_per_process_memory_fraction(cap / total)
    trials = 0

    def fits(b):
        nonlocal trials
        trials += 1
        try:
            for _ in range(2):
                train_step(torch, model, opt, cfg, b, seq, prec)
            torch.cuda.synchronize()
            return True
        except torch.cuda.OutOfMemoryError:
            return False
        finally:
            opt.zero_grad(set_to_none=True)
            gc.collect()
            torch.cuda.empty_cache()

    lo, hi = 0, 1
    try:
        while hi <= 4096 and fits(hi):
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)  # later cases in this process get the whole card
    row = {**base_row(torch, name, model, cfg), "mode": "train", "seq": seq, "batch": lo, "prec": prec, "opt": opt_name, "ckpt": ckpt}
    row.update({"cap_bytes": cap, "max_batch": lo, "trials": trials, "ok": lo > 0, "wall_s": round(time.time() - t0, 2)})
    # Fields the harness reads for memory rows are absent on purpose: this row only tests the largest batch.
    row.update({"peak_alloc_step": 0, "peak_reserved": 0, "nvml_proc_used": 0, "step_s": 0})
    assert lo > 0, f"{name}: not even batch 1 fits in {cap_gib} GiB"
    return row


def run_single(args):
    import torch
    import transformers

    assert torch.cuda.is_available(), "needs a CUDA GPU"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    part, parts = (int(x) for x in args.part.split("/"))
    cases = [("single", c) for c in SINGLE] + [("maxbatch", c) for c in MAX_BATCH]
    mine = [c for i, c in enumerate(cases) if i % parts == part]
    path = out / f"single-{part}.jsonl"
    failures = 0
    with path.open("w") as f:
        for i, (kind, case) in enumerate(mine):
            try:
                row = measure_single(torch, transformers, case, out) if kind == "single" else measure_max_batch(torch, transformers, case, out)
            except torch.cuda.OutOfMemoryError:
                row = {"model": case[0], "case": list(case), "ok": False, "oom": True}
            except Exception as e:  # keep going; the row says what failed
                failures += 1
                traceback.print_exc()
                row = {"model": case[0], "case": list(case), "ok": False, "error": f"{type(e).__name__}: {e}"}
            row["id"] = f"{kind}-{part}-{i}"
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(json.dumps({k: row.get(k) for k in ("id", "model", "mode", "batch", "prec", "peak_alloc_step", "max_batch", "ok", "wall_s")}), flush=True)
            gc.collect()
            torch.cuda.empty_cache()
    print(f"wrote {path}; {failures} failed", flush=True)
    return 1 if failures else 0


def run_dist(args):
    import torch
    import torch.distributed as dist
    import transformers
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    failures = 0
    for i, (name, strategy, seq, batch, ckpt, reshard) in enumerate(DIST):
        t0 = time.time()
        model = wrapped = opt = None
        try:
            torch.manual_seed(rank)
            model, cfg = build(name, out, torch, transformers)
            model.train()
            if ckpt:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if strategy == "ddp":
                wrapped = DDP(model, device_ids=[torch.cuda.current_device()])
                prec = "amp_bf16"
            else:
                mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                for block in blocks_of(model, cfg):
                    fully_shard(block, mp_policy=mp, reshard_after_forward=reshard)
                fully_shard(model, mp_policy=mp, reshard_after_forward=reshard)
                wrapped = model
                prec = "bf16_mixed"
            opt = torch.optim.AdamW(wrapped.parameters(), lr=1e-4)
            times = []
            before = 0
            for step in range(4):
                if step == 3:
                    torch.cuda.synchronize()
                    before = torch.cuda.memory_allocated()
                    torch.cuda.reset_peak_memory_stats()
                torch.cuda.synchronize()
                s = time.perf_counter()
                # DDP runs under autocast; FSDP2 casts through its MixedPrecisionPolicy.
                train_step(torch, wrapped, opt, cfg, batch, seq, "amp_bf16" if strategy == "ddp" else "bf16")
                torch.cuda.synchronize()
                times.append(time.perf_counter() - s)
            local = torch.tensor(
                [torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(), nvml_used(torch), before],
                dtype=torch.float64,
                device="cuda",
            )
            dist.all_reduce(local, op=dist.ReduceOp.MAX)
            step_t = torch.tensor([sorted(times[1:])[1]], dtype=torch.float64, device="cuda")
            dist.all_reduce(step_t, op=dist.ReduceOp.MAX)
            row = {
                "model": name,
                "model_type": cfg.model_type,
                "mode": "train",
                "strategy": strategy,
                "world": world,
                "reshard": reshard,
                "seq": seq,
                "batch": batch,
                "prec": "amp_bf16",
                "mixed": prec,
                "opt": "adamw",
                "ckpt": ckpt,
                "params": sum(p.numel() for p in model.parameters()),
                "peak_alloc_step": int(local[0].item()),
                "peak_reserved": int(local[1].item()),
                "nvml_proc_used": int(local[2].item()),
                "alloc_before_step": int(local[3].item()),
                "step_s": step_t.item(),
                "device": torch.cuda.get_device_name(),
                "torch": torch.__version__,
                "ok": True,
                "wall_s": round(time.time() - t0, 2),
            }
            assert row["peak_alloc_step"] >= row["alloc_before_step"], row
        except Exception as e:
            failures += 1
            traceback.print_exc()
            row = {"model": name, "strategy": strategy, "ok": False, "error": f"{type(e).__name__}: {e}"}
        row["id"] = f"dist-{i}"
        rows.append(row)
        if rank == 0:
            print(json.dumps({k: row.get(k) for k in ("id", "model", "strategy", "reshard", "peak_alloc_step", "ok", "wall_s")}), flush=True)
        model = wrapped = opt = None
        gc.collect()
        torch.cuda.empty_cache()
        dist.barrier()
    if rank == 0:
        path = out / "dist.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"wrote {path}; {failures} failed", flush=True)
    dist.destroy_process_group()
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["single", "dist"])
    ap.add_argument("out", help="directory for the JSONL results and derived configs")
    ap.add_argument("--part", default="0/1", help="run every N-th single-GPU case starting at I (I/N), to split over GPUs")
    args = ap.parse_args()
    return run_single(args) if args.kind == "single" else run_dist(args)


if __name__ == "__main__":
    sys.exit(main())
