#!/usr/bin/env python3
"""Measure T5 training memory and step time on one GPU, for the planner's encoder-decoder model (issue 47 item 6).

Builds T5ForConditionalGeneration with random weights from two config dicts (the t5-base and flan-t5-base shapes of
test/fixtures/planner/configs/), no download, and trains at a batch, source and target length in bf16 autocast and in
fp32 with AdamW: `model(input_ids=src, labels=tgt).loss`, backward, step, zero_grad(set_to_none=True). Three warm-up
steps, then `reset_peak_memory_stats()` and five timed steps: the peak of a steady step (the planner's
`max_memory_allocated`) and the mean step time by CUDA events. Each case runs with the attention transformers uses by
default and, where this transformers offers it, the other of eager and SDPA (T5 dispatches to SDPA only in
transformers releases after PR #47014; the planner models the eager path, whose scores are kept per head).

One JSON line per case on stdout (and in OUT/t5.jsonl), with the `gpuwise plan` command to compare against: it plans
the config written to OUT/configs/NAME/config.json, which says `tie_word_embeddings` as the model was actually built
(transformers 5.x is reported to force T5's lm_head tied; `lm_head_tied` and `params` say what ran).

Usage (from the repository root, one GPU, no internet; about a minute on an H100):
  python bench/memory/t5_measure.py OUT [--batch 8] [--source 512] [--targets 128,512]
Then, on a machine with gpuwise (the dist build, or `npx vite-node src/cli/bin.ts` from the repository):
  python3 -c 'import json,sys; [print(json.loads(l)["plan"]) for l in open(sys.argv[1]) if l.strip()]' OUT/t5.jsonl
and compare each plan's memory.peakAllocatedBytes and stepTimeMs (--json) with the line's peak_alloc and step_ms.
"""

import argparse
import gc
import json
import shlex
import sys
import time
from pathlib import Path

# The architecture fields of google-t5/t5-base and google/flan-t5-base (their config.json in the fixtures).
SHAPES = {
    "t5-base": {
        "model_type": "t5", "d_model": 768, "d_kv": 64, "d_ff": 3072, "num_heads": 12, "num_layers": 12,
        "num_decoder_layers": 12, "vocab_size": 32128, "relative_attention_num_buckets": 32, "dropout_rate": 0.1,
        "feed_forward_proj": "relu", "tie_word_embeddings": True, "n_positions": 512,
    },
    "flan-t5-base": {
        "model_type": "t5", "d_model": 768, "d_kv": 64, "d_ff": 2048, "num_heads": 12, "num_layers": 12,
        "num_decoder_layers": 12, "vocab_size": 32128, "relative_attention_num_buckets": 32, "dropout_rate": 0.1,
        "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False, "n_positions": 512,
    },
}
PRECISIONS = ("amp_bf16", "fp32")
PLAN_PRECISION = {"amp_bf16": "amp-bf16", "fp32": "fp32"}
# torch device names of the catalogue's cards, as `--gpu` takes them.
GPU_IDS = {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H200": "h200"}


def build(torch, transformers, shape, impl):
    """The model on the GPU in fp32; `impl` None keeps transformers' default attention."""
    # model_type is the class's; n_positions only informs the planner's default length (T5's positions are relative).
    cfg = transformers.T5Config(**{k: v for k, v in shape.items() if k not in ("model_type", "n_positions")})
    with torch.device("cuda"):
        if impl is None:
            model = transformers.T5ForConditionalGeneration(cfg)
        else:
            model = transformers.T5ForConditionalGeneration._from_config(cfg, attn_implementation=impl)
    return model.float(), cfg


def step(torch, model, opt, src, tgt, prec):
    if prec == "amp_bf16":
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=src, labels=tgt).loss
    else:
        loss = model(input_ids=src, labels=tgt).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def measure(torch, transformers, name, prec, impl, batch, source, target):
    model, cfg = build(torch, transformers, SHAPES[name], impl)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    vocab = cfg.vocab_size
    batches = [
        (torch.randint(0, vocab, (batch, source), device="cuda"), torch.randint(0, vocab, (batch, target), device="cuda"))
        for _ in range(2)
    ]
    for i in range(3):
        step(torch, model, opt, *batches[i % 2], prec)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for i in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(torch, model, opt, *batches[i % 2], prec)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    tied = model.lm_head.weight.data_ptr() == model.shared.weight.data_ptr()
    row = {
        "model": name,
        "prec": prec,
        "attn_requested": impl or "default",
        "attn_impl": getattr(model.config, "_attn_implementation", None),
        "batch": batch,
        "source": source,
        "target": target,
        "params": sum(p.numel() for p in model.parameters()),
        "lm_head_tied": tied,
        "alloc_before_step": before,
        "peak_alloc": torch.cuda.max_memory_allocated(),
        "peak_reserved": torch.cuda.max_memory_reserved(),
        "step_ms": round(sum(times) / len(times), 3),
        "step_ms_each": [round(t, 3) for t in times],
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    del model, opt, batches
    return row


def plan_command(row, out):
    """`gpuwise plan` on a config that says what was built (its tie as built), at the measured set-up."""
    shape = dict(SHAPES[row["model"]], tie_word_embeddings=row["lm_head_tied"])
    folder = Path(out) / "configs" / f"{row['model']}{'-tied' if row['lm_head_tied'] != SHAPES[row['model']]['tie_word_embeddings'] else ''}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(shape, indent=2) + "\n")
    gpu = GPU_IDS.get(row["device"], row["device"])
    args = ["gpuwise", "plan", "--model", str(folder / "config.json"), "--gpu", gpu, "--batch", str(row["batch"])]
    args += ["--seq", str(row["source"]), "--target-seq", str(row["target"]), "--precision", PLAN_PRECISION[row["prec"]]]
    return " ".join(shlex.quote(a) for a in args + ["--optimizer", "adamw", "--json"])


def other_impl(torch, transformers):
    """The attention besides the default one that this transformers builds T5 with, or None."""
    model, _ = build(torch, transformers, dict(SHAPES["t5-base"], num_layers=1, num_decoder_layers=1), None)
    default = getattr(model.config, "_attn_implementation", "eager")
    del model
    other = "sdpa" if default == "eager" else "eager"
    try:
        build(torch, transformers, dict(SHAPES["t5-base"], num_layers=1, num_decoder_layers=1), other)
    except (ValueError, TypeError, ImportError) as e:
        print(json.dumps({"note": f"no {other} attention for T5 in transformers {transformers.__version__}: {e}"}), flush=True)
        return None
    return other


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="directory for t5.jsonl and the configs the plan commands read")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--source", type=int, default=512)
    ap.add_argument("--targets", default="128,512", help="target lengths, comma-separated")
    args = ap.parse_args()
    import torch
    import transformers

    assert torch.cuda.is_available(), "needs a CUDA GPU"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    impls = [None] + [i for i in [other_impl(torch, transformers)] if i]
    t0 = time.time()
    failures = 0
    with (out / "t5.jsonl").open("w") as f:
        for name in SHAPES:
            for prec in PRECISIONS:
                for impl in impls:
                    for target in (int(t) for t in args.targets.split(",")):
                        try:
                            row = measure(torch, transformers, name, prec, impl, args.batch, args.source, target)
                            row["plan"] = plan_command(row, out)
                        except torch.cuda.OutOfMemoryError:
                            row = {"model": name, "prec": prec, "attn_requested": impl or "default", "target": target, "oom": True}
                        except Exception as e:  # keep going; the line says what failed
                            failures += 1
                            row = {"model": name, "prec": prec, "attn_requested": impl or "default", "target": target, "error": f"{type(e).__name__}: {e}"}
                        f.write(json.dumps(row) + "\n")
                        print(json.dumps(row), flush=True)
                        gc.collect()
                        torch.cuda.empty_cache()
    print(json.dumps({"wrote": str(out / "t5.jsonl"), "failures": failures, "wall_s": round(time.time() - t0, 1)}), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
