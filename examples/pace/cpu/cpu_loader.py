"""A DataLoader bound by CPU work in its workers: each sample is an image made from its index as a decoder would
return it (a smooth random picture), then augmented in numpy as a training transform does (random crop, flip, a 3x3
blur, colour jitter, normalisation): about a third of a millisecond of one core an 80x80 sample, so a batch of 16
costs a worker about 5 ms of CPU. Its lever is the worker count up to the cores the workers can have, and no further:
unlike io_loader.py, workers past the cores share them.

    python3 examples/pace/cpu/cpu_loader.py --workers 1        # one worker's CPU sets the pace
    python3 examples/pace/cpu/cpu_loader.py --workers 4        # 4 workers on 2 cores: more would not help

The loop: a small model over the images pooled to 12x12 (a few ms of CPU, receiving the batch included). CPU-bound
work slows down with whatever else runs on the machine, so the suite prints this script's predictions against the
measured steps but does not hold them to the bound (test/pace/cpuGroundTruth.test.ts says why); the levers doctor
names are held."""
import _cpu


def main():
    ap = _cpu.parser(__doc__, seconds=4, warmup=6, workers=1, batch=16)  # 4 s: doctor reads the workers' CPU once a second
    ap.add_argument("--size", type=int, default=80, help="image side in pixels (default 80: about 0.3 ms of CPU a sample)")
    a = _cpu.parse(ap)
    _cpu._harness.require(__file__, "numpy")
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1) * 255
    pad = 16

    class AugmentedImages(Dataset):
        def __len__(self):
            return 10**7  # more than any run takes: one epoch

        def __getitem__(self, i):
            s = a.size
            rng = np.random.default_rng(i)
            # "decoded": a random picture at a quarter of the resolution, upsampled (smooth, as photos are)
            img = rng.integers(0, 256, (3, (s + pad) // 4, (s + pad) // 4), dtype=np.uint8).repeat(4, 1).repeat(4, 2)
            y, x = rng.integers(0, pad, 2)
            img = img[:, y : y + s, x : x + s].astype(np.float32)  # random crop
            if rng.random() < 0.5:
                img = img[:, :, ::-1]  # horizontal flip
            p = np.pad(img, ((0, 0), (1, 1), (1, 1)), mode="edge")
            img = sum(p[:, dy : dy + s, dx : dx + s] for dy in range(3) for dx in range(3)) / 9  # 3x3 blur
            img = img * (0.8 + 0.4 * rng.random((3, 1, 1), dtype=np.float32))  # brightness jitter per channel
            img = (img - mean) / 58.0
            return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), int(i % 10)

    def train_once(a):
        model = torch.nn.Sequential(
            torch.nn.AdaptiveAvgPool2d(12), torch.nn.Flatten(), torch.nn.Linear(3 * 144, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
        )
        return _cpu.train(a, model, DataLoader(AugmentedImages(), batch_size=a.batch, **_cpu.loader_kwargs(a))), {}

    _cpu.run(__file__, a, train_once)


if __name__ == "__main__":
    main()
