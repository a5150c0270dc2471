"""Text generation with Hugging Face: GPT2LMHeadModel(GPT2Config()) (124M, random init, nothing downloaded),
bf16 weights, eval mode under torch.inference_mode, model.generate() of 128 new tokens (greedy, min_new_tokens
so a random model does not stop early) for one 32-token prompt at a time, in a loop. Issue 26's generation
case: each decode step is a few hundred small kernels whose launches take longer than the GPU's work (7.9 ms
a decode step on the H200).

A step here is one generate() call; the JSON line's *_step_ms are per decode step (the call's time over the
new tokens), with tokens_per_s and sequences (samples) per second beside them.

Flags: --batch N (N prompts in one generate() call), --static-cache (cache_implementation="static": recent
transformers compile the decoding forward with CUDA graphs themselves; older ones get
torch.compile(model.forward, mode="reduce-overhead") here), --new-tokens N, --steps N (generate() calls)."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "pace"))
sys.path.insert(0, here)
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=20, warmup=2, log_every=5)
ap.add_argument("--batch", type=int, default=1, help="prompts a generate() call")
ap.add_argument("--new-tokens", type=int, default=128)
ap.add_argument("--prompt-len", type=int, default=32)
ap.add_argument("--static-cache", action="store_true")
ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
a = H.parse(ap)
H.require(__file__, "transformers")

import torch  # noqa: E402
import transformers  # noqa: E402
from _hf_gpt2 import gpt2  # noqa: E402
from transformers import GenerationConfig  # noqa: E402

dev = H.device(a)
config, model = gpt2(a, dev, torch.bfloat16 if a.dtype == "bf16" else torch.float32)
gen_kwargs = {"max_new_tokens": a.new_tokens, "min_new_tokens": a.new_tokens, "do_sample": False, "pad_token_id": config.eos_token_id}
if a.static_cache:
    gen_kwargs["cache_implementation"] = "static"
    if hasattr(GenerationConfig(), "compile_config"):
        print(f"static cache: transformers {transformers.__version__} compiles the decoding forward itself", file=sys.stderr)
    elif hasattr(torch, "compile"):
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
g = torch.Generator().manual_seed(1)
prompts = torch.randint(0, config.vocab_size, (a.steps * a.batch, a.prompt_len), generator=g)

clock = H.StepClock(dev, a.warmup)
new_tokens = []
with torch.inference_mode():
    for i in range(a.steps):
        ids = prompts[i * a.batch : (i + 1) * a.batch].to(dev)
        out = model.generate(ids, attention_mask=torch.ones_like(ids), **gen_kwargs)
        new_tokens.append(out.shape[1] - ids.shape[1])
        clock.tick(a.batch)
        if clock.steps % a.log_every == 0:
            H.progress(clock, a.steps, new_tokens=new_tokens[-1])
calls_s = clock.durations_s()
per_token = new_tokens[clock.warmup :]
decode_s = [t / max(1, n) for t, n in zip(calls_s, per_token)]
figures = H.stats(decode_s, samples=0, timing="cuda-events" if clock.cuda else "host")
figures["samples_per_s"] = round(a.batch * len(calls_s) / sum(calls_s), 3) if calls_s else None  # sequences a second
H.emit(__file__, a, figures, samples_per_step=a.batch, step_unit="decode step (generate() time / new tokens)",
       tokens_per_s=round(a.batch * sum(per_token) / sum(calls_s), 1) if calls_s else None,
       generate_ms=round(sum(calls_s) / len(calls_s) * 1e3, 2) if calls_s else None, transformers=transformers.__version__)
