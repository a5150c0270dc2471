"""A decode step's host time by grad mode (issue 26, `decode-autograd`): a 12-layer GPT of small width (64, so the
ops' dispatch and not their arithmetic sets the time) generating with a KV cache, its decode step timed with gradients
recorded, under torch.no_grad() and under torch.inference_mode(), alternately, 6 rounds; the least disturbed median of
each (`--rounds`). On a GPU (`--device cuda`) the step is the host's time (nothing waits for the GPU, whose work is tiny) and the
kernels a decode step launches are counted (torch.profiler, one generation): what autograd costs the host per kernel
launched is the figure doctor's `decode-autograd` gain takes (src/doctor/decode.ts), from this model, not the run it
judges.

    python3 bench/doctor/decode_grad_modes.py [--device cpu|cuda]
"""

import argparse
import json
import statistics
import time

import torch

LAYERS, WIDTH, HEADS, VOCAB = 12, 64, 4, 100


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(WIDTH), torch.nn.LayerNorm(WIDTH)
        self.qkv, self.proj = torch.nn.Linear(WIDTH, 3 * WIDTH), torch.nn.Linear(WIDTH, WIDTH)
        self.fc, self.out = torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x, cache):
        b, t, _ = x.shape
        heads = lambda z: z.view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2)  # noqa: E731
        q, k, v = (heads(z) for z in self.qkv(self.ln1(x)).split(WIDTH, dim=2))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        att = ((q @ k.transpose(-2, -1)) * (WIDTH // HEADS) ** -0.5).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x)))), (k, v)


class Gpt(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, WIDTH)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln, self.head = torch.nn.LayerNorm(WIDTH), torch.nn.Linear(WIDTH, VOCAB)

    def forward(self, ids, caches):
        x, kept = self.emb(ids), []
        for block, cache in zip(self.blocks, caches):
            x, cache = block(x, cache)
            kept.append(cache)
        return self.head(self.ln(x)), kept


def decode_step_s(model, dev, new_tokens=128):
    """One generation (an 8-token prompt, then `new_tokens` greedy steps): its median decode step, and its mean decode
    step with the release of what the generation kept (the caches and, with gradients, the graph behind them) at its
    end, as a loop pays it once a sequence."""
    logits, caches = model(torch.randint(0, VOCAB, (1, 8), device=dev), [None] * LAYERS)
    tok, times = logits[:, -1].argmax(-1, keepdim=True), []
    if dev.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(new_tokens):
        t = time.perf_counter()
        logits, caches = model(tok, caches)
        tok = logits[:, -1].argmax(-1, keepdim=True)
        times.append(time.perf_counter() - t)
    del logits, caches, tok
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return statistics.median(times), (time.perf_counter() - start) / new_tokens


def kernels_per_step(model, dev, new_tokens=16):
    """The CUDA kernels one decode step launches (torch.profiler over `new_tokens` steps, under no_grad)."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        logits, caches = model(torch.randint(0, VOCAB, (1, 8), device=dev), [None] * LAYERS)
        tok = logits[:, -1].argmax(-1, keepdim=True)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(new_tokens):
                logits, caches = model(tok, caches)
                tok = logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "memcpy" not in e.name.lower() and "memset" not in e.name.lower())
    return kernels / new_tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    dev = torch.device(args.device)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Gpt().to(dev).eval()
    modes = {"gradients": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}
    got = {name: [] for name in modes}
    for _ in range(args.rounds):
        for name, mode in modes.items():
            with mode():
                got[name].append(decode_step_s(model, dev))
    for name, xs in got.items():
        medians, means = [x[0] for x in xs], [x[1] for x in xs]
        print("%-15s %7.1f us a decode step (median; rounds: %s), %7.1f us with the release (mean; rounds: %s)" % (
            name, min(medians) * 1e6, ", ".join("%.0f" % (x * 1e6) for x in medians), min(means) * 1e6, ", ".join("%.0f" % (x * 1e6) for x in means)))
    if dev.type == "cuda":
        k = kernels_per_step(model, dev)
        best = {name: min(x[0] for x in xs) * 1e6 for name, xs in got.items()}
        mean = {name: min(x[1] for x in xs) * 1e6 for name, xs in got.items()}
        # Each round runs the three modes back to back: their ratio within a round is the least disturbed by the
        # host's speed, which drifts between rounds (doctor's AUTOGRAD_HOST_RATIO, src/doctor/decode.ts).
        ratios = sorted(g[0] / i[0] for g, i in zip(got["gradients"], got["inference_mode"]))
        print(json.dumps({
            "device": torch.cuda.get_device_name(dev), "torch": torch.__version__, "kernelsPerStep": k,
            "gradOverInferenceByRound": ratios, "gradOverInferenceMedian": statistics.median(ratios),
            "stepUs": best, "meanStepUs": mean,
            "autogradUsPerKernel": {"vsNoGrad": (best["gradients"] - best["no_grad"]) / k, "vsInferenceMode": (best["gradients"] - best["inference_mode"]) / k},
            "autogradUsPerKernelWithRelease": {"vsNoGrad": (mean["gradients"] - mean["no_grad"]) / k, "vsInferenceMode": (mean["gradients"] - mean["inference_mode"]) / k},
        }))


if __name__ == "__main__":
    main()
