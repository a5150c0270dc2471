"""What the CPU ground-truth scripts share (test/pace/cpuGroundTruth.test.ts runs them under doctor, follows its plan
and measures each step): _harness.py's flags, step clock and JSON line, with the CPU as the device, a DataLoader's
switches, and two of their own:

- --seconds S: the run ends after S seconds of measured steps (after the warm-up), or at --steps, whichever comes
  first. A run as long in time on a fast machine as on a slow one: doctor reads the workers' CPU time about once a
  second, so a run of a few hundred milliseconds on a quiet machine would leave the loader's CPU unknown to it, and a
  loaded machine would make a run of so many steps last several times longer.
- --repeat N runs the whole training N times in the same process (a fresh model, loader and workers each time; no
  second interpreter start, which costs 1.5 s or more of importing torch on a small machine) and reports the MEDIAN of
  the runs' means as mean_step_ms, each run's mean in runs_ms: one run on a shared machine moves with what else runs
  there, the median of a few less.

The work is deterministic (every sample is made from its index, every model from seed 0); how many steps fit in the
seconds is not. The JSON line adds what the loop did with the measured steps' wall time: loop_wait_ms a step waiting
for its batch (in next()), loop_cpu_ms a step on a core (the thread's CPU time), and loop_cpu_share = CPU / (wall -
waits), about 1 where the machine lends the loop a core whenever it has work, well below on a loaded one."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _harness  # noqa: E402  (examples/pace/_harness.py)


def parser(doc, seconds, warmup, workers, batch):
    ap = _harness.parser(doc, steps=100000, warmup=warmup)
    ap.set_defaults(device="cpu")
    ap.add_argument("--seconds", type=float, default=seconds, help=f"seconds of measured steps, after the warm-up (default {seconds:g})")
    ap.add_argument("--batch", type=int, default=batch, help=f"samples per batch (default {batch})")
    ap.add_argument("--repeat", type=int, default=1, help="runs of the whole training in this process; the median of their means is reported")
    _harness.loader_flags(ap, workers)
    return ap


def parse(ap):
    a = _harness.parse(ap)
    import torch

    torch.set_num_threads(1)  # one thread in the loop: the step's host work, not how many cores the machine lends it
    _harness.device(a)
    return a


def loader_kwargs(a):
    import torch

    return _harness.loader_kwargs(a, torch.device("cpu"))


def step(model, opt, x, y):
    import torch

    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


class Clock(_harness.StepClock):
    """_harness's step clock, the run's end (--steps, --seconds), and the loop's waits and CPU time."""

    def __init__(self, a):
        import torch

        super().__init__(torch.device("cpu"), a.warmup)
        self.a = a
        self.wait_s = 0.0
        self.idle_s = 0.0
        self.cpu0 = None
        self.cpu1 = None

    def running(self):
        """Whether the run goes on: fewer than --steps steps, and under --seconds since the warm-up ended."""
        if self.steps >= self.a.steps:
            return False
        return self.cpu0 is None or time.perf_counter() - self.host[self.warmup] < self.a.seconds

    def next(self, it):
        t, c = time.perf_counter(), time.thread_time()
        batch = next(it)
        if self.cpu0 is not None:
            dt = time.perf_counter() - t
            self.wait_s += dt
            self.idle_s += max(0.0, dt - (time.thread_time() - c))
        return batch

    def tick(self, samples=0):
        super().tick(samples)
        if self.steps == self.warmup:
            self.cpu0 = time.thread_time()
        self.cpu1 = time.thread_time()

    def loop_figures(self):
        n = self.steps - self.warmup
        if n <= 0 or self.cpu0 is None:
            return {}
        wall = self.host[-1] - self.host[self.warmup]
        cpu = self.cpu1 - self.cpu0
        return {
            "loop_cpu_ms": round(cpu / n * 1e3, 3),
            "loop_wait_ms": round(self.wait_s / n * 1e3, 3),
            "loop_idle_ms": round(self.idle_s / n * 1e3, 3),
            "loop_cpu_share": round(cpu / max(1e-9, wall - self.wait_s), 3),
        }


def train(a, model, loader):
    """The plain loop over `loader` (its epochs one after another) until the run ends: SGD with momentum unless the
    script passes its own loop. Returns the clock."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    clock = Clock(a)
    it = _harness.forever(loader)
    while clock.running():
        x, y = clock.next(it)
        step(model, opt, x, y)
        clock.tick(len(x))
    it.close()  # the workers end before the next repeat starts its own
    return clock


def run(path, a, train_once, **extra):
    """Calls train_once(a) -> (Clock, extra figures) a.repeat times and prints the one JSON line."""
    import torch

    runs = []
    for _ in range(max(1, a.repeat)):
        torch.manual_seed(0)
        clock, more = train_once(a)
        runs.append((dict(clock.summary(), **clock.loop_figures()), more))
    means = [r[0]["mean_step_ms"] for r in runs]
    # the figures of the run whose mean is the median (the lower middle one of an even count)
    figures, more = sorted(runs, key=lambda r: r[0]["mean_step_ms"])[(len(runs) - 1) // 2]
    figures = dict(figures, mean_step_ms=round(statistics.median(means), 3), runs_ms=means)
    _harness.emit(path, a, figures, samples_per_step=a.batch, cpus=len(os.sched_getaffinity(0)), **more, **extra)
