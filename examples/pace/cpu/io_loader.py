"""A DataLoader whose samples wait on I/O: each sample sleeps --sample-ms (a read from slow storage or the network)
before a small tensor is made from its index, so a worker holds almost no CPU while it waits. Its lever is the worker
count, past the cores: 8 workers on 2 cores wait in parallel as well as 8 on 8 (issue 44: tiny_train.py with a 2 ms
wait measured 4.4 ms a step with 8 workers against 14.3 ms with 2, and doctor said num_workers=1).

    python3 examples/pace/cpu/io_loader.py --workers 2            # the loop waits most of its step
    python3 examples/pace/cpu/io_loader.py --workers 16           # the host's step, the loader keeping up

The loop: an MLP's step (about 7 ms of CPU on one thread: the workers' own CPU, 2-3 ms a batch for making the samples
and handing the batch over, stays well under what the loop leaves of 2 cores). A sleep takes about as long on a loaded machine as on a quiet
one, so the loader's rate is much the same under doctor and in the plain runs after it: the suite holds the steps this
loader sets to the bound. What a loaded machine adds is the wake-up after each sleep (waiting for a core): long waits
of few samples keep that small against the wait (8 ms a sample; with 4 ms, 4 workers on the loaded 2-core VM took
20% longer a batch than the sleeps)."""
import time

import _cpu


def main():
    ap = _cpu.parser(__doc__, seconds=3, warmup=8, workers=2, batch=8)
    ap.add_argument("--sample-ms", type=float, default=8.0, help="the wait of one sample (default 8 ms: 64 ms a batch of 8)")
    ap.add_argument("--dim", type=int, default=256, help="features of a sample")
    ap.add_argument("--hidden", type=int, default=2048, help="the MLP's hidden width (the host's work a step: about 7 ms)")
    a = _cpu.parse(ap)
    import torch
    from torch.utils.data import DataLoader, Dataset

    class WaitingSamples(Dataset):
        def __len__(self):
            return 10**7  # more than any run takes: no epoch start inside a run (epochs.py is the script with those)

        def __getitem__(self, i):
            time.sleep(a.sample_ms / 1e3)  # the I/O: the worker waits, holding no CPU
            g = torch.Generator().manual_seed(i)
            return torch.randn(a.dim, generator=g), int(i % 10)

    def train_once(a):
        model = torch.nn.Sequential(torch.nn.Linear(a.dim, a.hidden), torch.nn.ReLU(), torch.nn.Linear(a.hidden, 10))
        return _cpu.train(a, model, DataLoader(WaitingSamples(), batch_size=a.batch, **_cpu.loader_kwargs(a))), {}

    _cpu.run(__file__, a, train_once)


if __name__ == "__main__":
    main()
