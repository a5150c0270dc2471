"""follow_plan.py's harness flags as timm train.py's: one `label=flags` line in, one out."""
import sys
MAP = {"--workers": "-j", "--channels-last": "--channels-last", "--compile": "--torchcompile", "--pin-memory": "--pin-mem"}
for line in sys.stdin:
    label, _, flags = line.strip().partition("=")
    toks, out, i = flags.split(), [], 0
    while i < len(toks):
        t = toks[i]
        val = toks[i + 1] if i + 1 < len(toks) and not toks[i + 1].startswith("--") else None
        i += 2 if val is not None else 1
        if t == "--amp":
            out += ["--amp", "--amp-dtype", "bfloat16" if val == "bf16" else "float16"]
        elif t in MAP:
            out += [MAP[t]] + ([val] if val else [])
        elif t in ("--persistent-workers", "--drop-last"):
            pass  # timm's train loader has both already
        else:
            out += ["UNMAPPED" + t]
    print(label + "=" + " ".join(out))
