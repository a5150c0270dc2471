"""Short epochs whose DataLoader workers start again at each one: every epoch is --batches batches, and each worker
opens its data set when it starts (--open-ms: a `worker_init_fn` that waits as opening an LMDB, a remote bucket or a
large index would), so each epoch start stalls the loop for the workers' start-up and the fill of the first batch.
Its lever is persistent_workers=True: the workers, opened once, are kept between epochs (the fill stays: they start
the next epoch's batches only when it begins).

    python3 examples/pace/cpu/epochs.py                          # workers started again every 6 steps
    python3 examples/pace/cpu/epochs.py --persistent-workers     # started once

Samples wait on I/O as in io_loader.py (--sample-ms a sample; the worker holds no CPU), and the loop is a small MLP's
step: the stall is mostly waiting, much the same on a loaded machine, so the suite holds this script's predictions to
20%. What a loaded machine moves is the fork of the workers (50-250 ms for two on the loaded 2-core VM): a long
opening keeps it a small part of the stall."""
import time

import _cpu


def main():
    ap = _cpu.parser(__doc__, seconds=4, warmup=6, workers=2, batch=8)  # the warm-up: the first epoch; 4 s: 8 epochs or so
    ap.add_argument("--batches", type=int, default=6, help="batches an epoch (default 6)")
    ap.add_argument("--open-ms", type=float, default=300.0, help="what a worker waits opening the data set when it starts (default 300 ms)")
    ap.add_argument("--sample-ms", type=float, default=2.0, help="the wait of one sample (default 2 ms: 16 ms a batch of 8)")
    ap.add_argument("--dim", type=int, default=256, help="features of a sample")
    a = _cpu.parse(ap)
    import torch
    from torch.utils.data import DataLoader, Dataset

    class WaitingSamples(Dataset):
        def __len__(self):
            return a.batches * a.batch

        def __getitem__(self, i):
            time.sleep(a.sample_ms / 1e3)  # the I/O: the worker waits, holding no CPU
            g = torch.Generator().manual_seed(i)
            return torch.randn(a.dim, generator=g), int(i % 10)

    def open_data_set(worker_id):
        time.sleep(a.open_ms / 1e3)  # each worker opens its data set (a connection, a file index) when it starts

    def train_once(a):
        model = torch.nn.Sequential(torch.nn.Linear(a.dim, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        init = open_data_set if a.workers else None
        loader = DataLoader(WaitingSamples(), batch_size=a.batch, shuffle=True, worker_init_fn=init, **_cpu.loader_kwargs(a))
        clock = _cpu.Clock(a)
        epochs = 0
        # whole epochs, so that the measured steps hold as many epoch starts as epochs (the warm-up is one)
        while clock.running():
            it = iter(loader)  # an epoch: the workers start here unless persistent
            epochs += 1
            for _ in range(a.batches):
                x, y = clock.next(it)
                _cpu.step(model, opt, x, y)
                clock.tick(len(x))
                if clock.steps >= a.steps:
                    break
            del it
        return clock, {"epochs": epochs, "batches_per_epoch": a.batches}

    _cpu.run(__file__, a, train_once)


if __name__ == "__main__":
    main()
