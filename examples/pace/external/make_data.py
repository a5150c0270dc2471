"""Data for the runs: a llm.c token file (its header: magic 20240520, version 1, token count; uint16 tokens with
Zipf-like frequencies) and a text file for minGPT's char model."""
import numpy as np, os, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
n = 4_000_000
tok = np.minimum(rng.zipf(1.2, n) - 1, 50256).astype(np.uint16)
header = np.zeros(256, dtype=np.int32)
header[0], header[1], header[2] = 20240520, 1, n
with open(os.path.join(out, "tok.bin"), "wb") as f:
    f.write(header.tobytes()); f.write(tok.tobytes())
words = ["the", "king", "queen", "of", "and", "to", "my", "lord", "thou", "shall", "be", "not", "what", "is", "love"]
text = " ".join(words[i % len(words)] for i in rng.integers(0, 10**6, 400_000)) + "\n"
open(os.path.join(out, "input.txt"), "w").write(text)
