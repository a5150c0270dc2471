"""A decoding loop of one's own with Hugging Face: GPT2LMHeadModel(GPT2Config()) (124M, random init, nothing
downloaded), bf16 weights, eval mode, greedy decoding with the model's KV cache (past_key_values), one 32-token prompt
at a time and 128 new tokens each, the end-of-sequence check at every token (`if (tok == eos).all()`: a sync). As
first written it forgets torch.no_grad(): every forward records an autograd graph for a backward that never comes
(issue 26's `decode-autograd`).

A step is one forward call of the model (the prompt's, then one a new token), as doctor counts them. Flags:
--grad-mode grad|no_grad|inference (default grad), --new-tokens N, --prompt-len N, --steps N (forward calls in all),
--batch N (prompts decoded together), --model gpt2|llama (llama: LlamaForCausalLM(LlamaConfig(...)), 16 layers of
width 1024, grouped-query attention, RMSNorm, rotary embeddings and a SiLU MLP: about 0.2B parameters, random init,
the architecture held out of the figures doctor's decode-autograd gain was set on)."""
import contextlib
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "pace"))
sys.path.insert(0, here)
import _harness as H  # noqa: E402

ap = H.parser(__doc__, steps=520, warmup=10, log_every=128)
ap.add_argument("--grad-mode", choices=["grad", "no_grad", "inference"], default="grad")
ap.add_argument("--new-tokens", type=int, default=128)
ap.add_argument("--prompt-len", type=int, default=32)
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--model", choices=["gpt2", "llama"], default="gpt2")
a = H.parse(ap)
H.require(__file__, "transformers")

import torch  # noqa: E402
import transformers  # noqa: E402
from _hf_gpt2 import gpt2  # noqa: E402

dev = H.device(a)


def llama(a, dev, dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    if a.smoke:
        a.new_tokens, a.prompt_len = min(a.new_tokens, 8), min(a.prompt_len, 8)
        config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=512, bos_token_id=0, eos_token_id=0)
    else:
        config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=16, num_attention_heads=16,
                             num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)
    torch.manual_seed(0)
    return config, LlamaForCausalLM(config).to(dev, dtype=dtype).eval()


config, model = (llama if a.model == "llama" else gpt2)(a, dev, torch.bfloat16)
mode = {"grad": contextlib.nullcontext, "no_grad": torch.no_grad, "inference": torch.inference_mode}[a.grad_mode]
g = torch.Generator().manual_seed(1)

clock = H.StepClock(dev, a.warmup)
sequences = 0
with mode():
    while clock.steps < a.steps:
        ids = torch.randint(0, config.vocab_size, (a.batch, a.prompt_len), generator=g).to(dev)
        out = model(input_ids=ids, use_cache=True)
        past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        clock.tick(a.batch)
        for _ in range(a.new_tokens - 1):
            if clock.steps >= a.steps or bool((tok == config.eos_token_id).all()):
                break
            out = model(input_ids=tok, past_key_values=past, use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
            clock.tick(a.batch)
            if clock.steps % a.log_every == 0:
                H.progress(clock, a.steps)
        sequences += 1
figures = clock.summary()
H.emit(__file__, a, figures, samples_per_step=a.batch, model=a.model, step_unit="forward call (a prompt or one new token)", sequences=sequences,
       transformers=transformers.__version__)
