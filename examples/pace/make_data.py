"""Makes the corpus's local data sets (no download anywhere): a folder of JPEGs for ImageFolder, a tokenised
uint16 file for the memmap GPT, and a uint8 image array (.npy, memory-mapped) for the Lightning data module.
Each is made once into a temporary name and renamed when complete, so a half-made set is never read and two
runs can race. The scripts call ensure_*() themselves; run.sh makes them all once up front:

    python3 examples/pace/make_data.py --data /tmp/gpuwise-corpus-data [--smoke] [jpeg tokens images]

The JPEGs cost what photos cost to decode: smooth colour fields with edges and grain, saved at quality 90,
about 75 KB for 500x375 (0.4 bytes a pixel); a real photo resized to 500x375 and saved the same way is 85 KB
and decodes within 10% of their time with Pillow. Not noise (which decodes slower) nor flat colour (faster)."""
import argparse
import multiprocessing as mp
import os
import shutil
import sys
import time

import numpy as np

DEFAULT_DATA = os.environ.get("GPUWISE_CORPUS_DATA", "/tmp/gpuwise-corpus-data")

# Full sizes for the GPU runs; --smoke gives sets small enough for a CPU check in seconds.
JPEG = {"images": 4000, "classes": 10, "size": (500, 375)}
JPEG_SMOKE = {"images": 48, "classes": 4, "size": (96, 72)}
TOKENS = {"tokens": 50_000_000, "vocab": 50257}
TOKENS_SMOKE = {"tokens": 200_000, "vocab": 512}
IMAGES = {"images": 8192, "side": 232, "classes": 10}
IMAGES_SMOKE = {"images": 64, "side": 40, "classes": 4}


def _root(data, smoke):
    return os.path.join(data, "smoke") if smoke else data


def _done(path):
    return os.path.exists(path)


def _publish(tmp, final):
    """Moves a finished temporary file or folder into place; a concurrent maker that finished first wins."""
    try:
        os.rename(tmp, final)
    except OSError:
        if not os.path.exists(final):
            raise
        shutil.rmtree(tmp, ignore_errors=True) if os.path.isdir(tmp) else os.remove(tmp)


def _photo_like(rng, w, h):
    """An RGB uint8 image with a photo's mix of smooth regions, edges and sensor grain."""
    from PIL import Image, ImageDraw, ImageFilter

    def field(cells_w, cells_h, amp):
        small = rng.integers(0, 256, size=(cells_h, cells_w, 3), dtype=np.uint8)
        big = Image.fromarray(small).resize((w, h), Image.BICUBIC)
        return (np.asarray(big, dtype=np.float32) - 128.0) * amp

    base = 128.0 + field(6, 5, 0.9) + field(max(2, w // 24), max(2, h // 24), 0.35)
    img = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(4, 12))):  # objects: hard edges the decoder must carry
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        x1, y1 = x0 + int(rng.integers(10, w // 2)), y0 + int(rng.integers(10, h // 2))
        colour = tuple(int(c) for c in rng.integers(0, 256, size=3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([x0, y0, x1, y1], fill=colour)
    img = img.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(0.4, 1.0))))
    grain = rng.standard_normal((h, w, 3), dtype=np.float32) * 12.0
    return Image.fromarray(np.clip(np.asarray(img, dtype=np.float32) + grain, 0, 255).astype(np.uint8))


def _write_jpegs(job):
    folder, start, count, classes, size, seed = job
    for i in range(start, start + count):
        rng = np.random.default_rng(seed + i)
        w, h = size if rng.random() < 0.75 else (size[1], size[0])  # a quarter portrait, as in photo sets
        _photo_like(rng, w, h).save(os.path.join(folder, f"class_{i % classes:02d}", f"img_{i:06d}.jpg"), quality=90)
    return count


def ensure_jpeg(data=DEFAULT_DATA, smoke=False):
    """The ImageFolder root (one sub-folder a class); made with every core when absent."""
    spec = JPEG_SMOKE if smoke else JPEG
    final = os.path.join(_root(data, smoke), "jpeg")
    if _done(final):
        return final
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = f"{final}.tmp-{os.getpid()}"
    for c in range(spec["classes"]):
        os.makedirs(os.path.join(tmp, f"class_{c:02d}"), exist_ok=True)
    t0 = time.time()
    procs = max(1, min(os.cpu_count() or 1, 32))
    per = -(-spec["images"] // (procs * 4))
    jobs = [(tmp, s, min(per, spec["images"] - s), spec["classes"], spec["size"], 1000) for s in range(0, spec["images"], per)]
    if procs == 1 or len(jobs) == 1:
        done = sum(map(_write_jpegs, jobs))
    else:
        with mp.get_context("fork").Pool(procs) as pool:
            done = sum(pool.imap_unordered(_write_jpegs, jobs))
    mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp) for f in fs) / 1e6
    _publish(tmp, final)
    print(f"make_data: {done} JPEGs ({mb:.0f} MB, {spec['classes']} classes) in {final}, {time.time() - t0:.1f} s on {procs} processes", file=sys.stderr)
    return final


def ensure_tokens(data=DEFAULT_DATA, smoke=False):
    """A uint16 token file (nanoGPT's train.bin layout) with some structure: Zipf-like unigram frequencies and
    repeated phrases, so a model's loss can fall. Returns (path, vocab)."""
    spec = TOKENS_SMOKE if smoke else TOKENS
    final = os.path.join(_root(data, smoke), f"tokens-{spec['vocab']}.bin")
    if _done(final):
        return final, spec["vocab"]
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = f"{final}.tmp-{os.getpid()}"
    t0 = time.time()
    rng = np.random.default_rng(7)
    vocab, n = spec["vocab"], spec["tokens"]
    ranks = rng.permutation(vocab)  # which id is frequent is arbitrary
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    cdf = np.cumsum(p / p.sum())
    phrases = [ranks[np.searchsorted(cdf, rng.random(int(rng.integers(4, 24))))] for _ in range(2000)]
    with open(tmp, "wb") as f:
        chunk = 5_000_000
        for s in range(0, n, chunk):
            m = min(chunk, n - s)
            toks = ranks[np.minimum(np.searchsorted(cdf, rng.random(m)), vocab - 1)].astype(np.uint16)
            for pos in rng.integers(0, m - 32, size=m // 40):  # about a third of the text in repeated phrases
                ph = phrases[int(pos) % len(phrases)]
                toks[pos : pos + len(ph)] = ph
            toks.tofile(f)
    _publish(tmp, final)
    print(f"make_data: {n:,} tokens (vocab {vocab}) in {final}, {time.time() - t0:.1f} s", file=sys.stderr)
    return final, vocab


def ensure_images(data=DEFAULT_DATA, smoke=False):
    """A uint8 [N, 3, S, S] array saved as .npy (np.load(..., mmap_mode="r") reads it lazily) and its labels.
    Returns (images_path, labels_path, classes)."""
    spec = IMAGES_SMOKE if smoke else IMAGES
    root = _root(data, smoke)
    final = os.path.join(root, f"images-{spec['side']}.npy")
    labels = os.path.join(root, f"labels-{spec['images']}.npy")
    if _done(final) and _done(labels):
        return final, labels, spec["classes"]
    os.makedirs(root, exist_ok=True)
    t0 = time.time()
    rng = np.random.default_rng(11)
    n, s = spec["images"], spec["side"]
    tmp = f"{final}.tmp-{os.getpid()}.npy"
    arr = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(n, 3, s, s))
    ramp = np.linspace(0, 215, s).astype(np.uint8)
    for i in range(0, n, 256):  # bands plus grain (the pixels cost nothing to read: no decode), in chunks
        m = min(256, n - i)
        grain = rng.integers(0, 40, size=(m, 3, s, s), dtype=np.uint8)
        arr[i : i + m] = grain + ramp[None, None, None, :] // rng.integers(1, 4, size=(m, 3, 1, 1), dtype=np.uint8)
    arr.flush()
    del arr
    ltmp = f"{labels}.tmp-{os.getpid()}.npy"
    np.save(ltmp, rng.integers(0, spec["classes"], size=n, dtype=np.int64))
    _publish(ltmp, labels)
    _publish(tmp, final)
    print(f"make_data: {n} images {s}x{s} ({n * 3 * s * s / 1e6:.0f} MB) in {final}, {time.time() - t0:.1f} s", file=sys.stderr)
    return final, labels, spec["classes"]


MAKERS = {"jpeg": ensure_jpeg, "tokens": ensure_tokens, "images": ensure_images}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--smoke", action="store_true", help="the tiny sets of the CPU check")
    ap.add_argument("sets", nargs="*", choices=[*MAKERS, []], default=list(MAKERS))
    a = ap.parse_args()
    for name in a.sets or list(MAKERS):
        if name == "jpeg":
            try:
                import PIL  # noqa: F401
            except ImportError:
                print("make_data: jpeg: skipped, Pillow is not installed", file=sys.stderr)
                continue
        MAKERS[name](a.data, a.smoke)
