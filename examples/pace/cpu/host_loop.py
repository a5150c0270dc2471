"""A host-bound loop: a deep, narrow MLP (--layers Linear(--width) layers) at a small batch, so each step is hundreds
of tiny ops whose cost is the framework's per-op overhead, not their arithmetic (AdamW's loop over the parameters adds
more). The DataLoader reads samples held in memory in the loop itself (no worker: on a loaded machine a worker may be
late for reasons of its own, and this script is about the host). One lever and one non-lever:
- the batch: the per-op overhead is paid per step, so a batch 4x larger costs little more a step and far less a sample
  (--batch 32 against 8);
- DataLoader workers give nothing: the loop does not wait on its loader, so advice to add workers would be wrong.

    python3 examples/pace/cpu/host_loop.py                 # batch 8
    python3 examples/pace/cpu/host_loop.py --batch 32      # the step per sample about 3x shorter

The step is CPU work, which slows down with whatever else runs on the machine: the suite prints this script's
predictions against the measured steps but does not hold them to the bound; whether the plan names the right lever
is held."""
import _cpu


def main():
    ap = _cpu.parser(__doc__, seconds=3, warmup=8, workers=0, batch=8)
    ap.add_argument("--layers", type=int, default=32, help="Linear layers (default 32)")
    ap.add_argument("--width", type=int, default=32, help="their width (default 32)")
    a = _cpu.parse(ap)
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    g = torch.Generator().manual_seed(0)
    n = 8192  # samples in memory; a run goes over them as many times as it takes
    data = TensorDataset(torch.randn(n, a.width, generator=g), torch.randint(0, 10, (n,), generator=g))

    def train_once(a):
        layers = []
        for _ in range(a.layers):
            layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(a.width, 10))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # a loop over every parameter: more tiny ops
        loader = DataLoader(data, batch_size=a.batch, drop_last=True, **_cpu.loader_kwargs(a))
        clock = _cpu.Clock(a)
        it = _cpu._harness.forever(loader)
        while clock.running():
            x, y = clock.next(it)
            _cpu.step(model, opt, x, y)
            clock.tick(len(x))
        return clock, {}

    _cpu.run(__file__, a, train_once)


if __name__ == "__main__":
    main()
