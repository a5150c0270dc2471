"""The Hugging Face GPT-2 the generation scripts load (hf_generate.py, decode_loop.py): GPT2LMHeadModel(GPT2Config())
(124M, random init, nothing downloaded), or under --smoke a 2-layer one of width 64, whose prompt and new tokens
shrink to 8."""


def gpt2(a, dev, dtype):
    """(config, model in eval mode on `dev` in `dtype`), the weights seeded."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    if a.smoke:
        a.new_tokens, a.prompt_len = min(a.new_tokens, 8), min(a.prompt_len, 8)
        config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=128, bos_token_id=0, eos_token_id=0)
    else:
        config = GPT2Config()
    torch.manual_seed(0)
    return config, GPT2LMHeadModel(config).to(dev, dtype=dtype).eval()
