"""What every corpus script of examples/pace and examples/levers shares, and nothing of its training: the
common flags, the device, a clean skip when a package is missing, the image scripts' loader and precision
switches, and the step clock whose summary is the script's one JSON line on stdout (the measured truth that
summarize.py sets against doctor's plan).

The clock: on CUDA a timing event is recorded at the end of every step (a few microseconds, never a sync) and
the step times are the intervals between consecutive events as the GPU reached them, idle gaps included, so
a step that waited for its batch is long even though the host launched it quickly; on the CPU, host wall
clock. The first --warmup steps are left out. mean_step_ms is the throughput (the mean, not the median: a
loop that stalls every few steps is as slow as its mean); wall_mean_step_ms checks it against the host's
clock over the same steps, synchronised at the end. Steps that ran while a profiler was on (doctor's
window) are left out of the figures and counted in profiled_steps_left_out, so a run under doctor reports
its unprofiled steps as a plain run does (wall_mean_step_ms keeps them)."""
import argparse
import importlib
import json
import math
import os
import platform
import sys
import time

SKIP_EXIT = 77  # the automake convention for "skipped"; the corpus test reads it
DEFAULT_DATA = os.environ.get("GPUWISE_CORPUS_DATA", "/tmp/gpuwise-corpus-data")


def parser(doc, steps, warmup=10, log_every=10):
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes and a few steps: a CPU check that the code runs")
    ap.add_argument("--steps", type=int, default=None, help=f"training steps (default {steps}; smoke 4)")
    ap.add_argument("--warmup", type=int, default=None, help=f"steps left out of the timing (default {warmup}; smoke 1)")
    ap.add_argument("--log-every", type=int, default=log_every, help="steps between progress lines on stderr")
    ap.add_argument("--data", default=DEFAULT_DATA, help="where the local data sets are made (make_data.py)")
    # The two global switches tune --plan may keep: set here so its verified best can be run plainly by flags.
    ap.add_argument("--tf32", action="store_true", help='torch.set_float32_matmul_precision("high") and cuDNN TF32')
    ap.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    ap.set_defaults(_steps=steps, _warmup=warmup)
    return ap


def parse(ap, smoke_steps=4):
    a = ap.parse_args()
    if a.steps is None:
        a.steps = smoke_steps if a.smoke else a._steps
    if a.warmup is None:
        a.warmup = 1 if a.smoke else a._warmup
    a.warmup = max(0, min(a.warmup, a.steps - 2))
    del a._steps, a._warmup
    if a.smoke and hasattr(a, "workers"):
        a.workers = min(a.workers, 2)  # a CPU check on a small shared machine: the code path, not the speed
    return a


def script_name(path):
    return os.path.splitext(os.path.basename(path))[0]


def skip(path, why):
    """Ends the script as skipped (SKIP_EXIT) with one line saying why."""
    print(f"{script_name(path)}: skipped: {why}", file=sys.stderr)
    sys.exit(SKIP_EXIT)


def require(path, *modules):
    """Exits SKIP_EXIT with one line when a module the script needs is missing (the CPU python of CI has
    torch but not torchvision, timm, lightning or transformers)."""
    missing = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            missing.append(m)
    if missing:
        skip(path, f"needs {', '.join(missing)}, not importable by {sys.executable}")


def device(a):
    import torch

    dev = torch.device(a.device)
    if getattr(a, "tf32", False):
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.allow_tf32 = True
    if getattr(a, "cudnn_benchmark", False):
        torch.backends.cudnn.benchmark = True
    if a.smoke:
        torch.set_num_threads(1)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print(f"--device {a.device}: CUDA is not available to torch {torch.__version__} (use --device cpu --smoke for a CPU check)", file=sys.stderr)
        sys.exit(2)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor() or "cpu"
    print(f"torch {torch.__version__} on {name}, {os.cpu_count()} CPUs; {vars(a)}", file=sys.stderr)
    return dev


# The image scripts' switches, one definition: the loader's (issue 25's input stage) and the model's.
def loader_flags(ap, workers):
    ap.add_argument("--workers", type=int, default=workers, help=f"DataLoader num_workers (default {workers})")
    ap.add_argument("--pin-memory", action="store_true", help="DataLoader(pin_memory=True), non_blocking copies")
    ap.add_argument("--persistent-workers", action="store_true", help="keep the workers between epochs")
    ap.add_argument("--prefetch-factor", type=int, default=None, help="batches each worker prepares ahead (torch default 2)")


def loader_kwargs(a, dev):
    kw = {"num_workers": a.workers, "pin_memory": a.pin_memory and dev.type == "cuda"}
    if a.workers > 0:
        kw["persistent_workers"] = a.persistent_workers
        if a.prefetch_factor is not None:
            kw["prefetch_factor"] = a.prefetch_factor
    return kw


def model_flags(ap, amp="none"):
    ap.add_argument("--amp", choices=["none", "bf16", "fp16"], default=amp, help=f"autocast dtype (default {amp})")
    ap.add_argument("--channels-last", action="store_true", help="model and inputs in channels_last")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument(
        "--compile-mode", choices=["default", "reduce-overhead"], default="default", help="with --compile: reduce-overhead replays the compiled regions as CUDA graphs"
    )


def autocast(amp, dev):
    """torch.autocast for amp "bf16" or "fp16"; nothing for "none"."""
    import contextlib

    import torch

    if amp == "none":
        return contextlib.nullcontext()
    return torch.autocast(dev.type, dtype=torch.bfloat16 if amp == "bf16" else torch.float16)


def compile_model(model, mode=None):
    """torch.compile(model), with `mode` ("reduce-overhead": compiled regions replayed as CUDA graphs) where given."""
    import torch

    if not hasattr(torch, "compile"):
        print(f"torch {torch.__version__} has no torch.compile: the model stays eager", file=sys.stderr)
        return model
    return torch.compile(model, mode=mode) if mode and mode != "default" else torch.compile(model)


def forever(loader):
    """Batches across epochs (each pass re-creates the workers unless persistent_workers)."""
    while True:
        yield from loader


class StepClock:
    def __init__(self, dev, warmup):
        import torch

        self.torch = torch
        self.cuda = dev.type == "cuda"
        self.warmup = warmup
        self.host = [time.perf_counter()]
        self.events = []
        self.samples = []
        self.profiled = []  # per step: a profiler was on at its start or at its end
        self._profiling = getattr(torch._C._autograd, "_profiler_enabled", lambda: False)
        self._was_profiling = self._profiling()
        if self.cuda:
            self._event()

    def _event(self):
        e = self.torch.cuda.Event(enable_timing=True)
        e.record()
        self.events.append(e)

    def tick(self, samples=0):
        """At the end of each step, with the samples it took."""
        self.host.append(time.perf_counter())
        self.samples.append(samples)
        if self.cuda:
            self._event()
        now = self._profiling()
        self.profiled.append(now or self._was_profiling)
        self._was_profiling = now

    @property
    def steps(self):
        return len(self.samples)

    def recent_ms(self, n=10):
        """The host's mean over the last n steps, for the progress line (no sync)."""
        k = min(n, self.steps)
        return (self.host[-1] - self.host[-1 - k]) / k * 1e3 if k else 0.0

    def _all_s(self):
        """Every step's time after the warm-up, in seconds (GPU intervals on CUDA, after a sync)."""
        if self.cuda:
            self.torch.cuda.synchronize()
            ends = self.events
            return [ends[i - 1].elapsed_time(ends[i]) / 1e3 for i in range(1 + self.warmup, len(ends))]
        return [self.host[i] - self.host[i - 1] for i in range(1 + self.warmup, len(self.host))]

    def durations_s(self):
        """The measured steps' times in seconds: after the warm-up, unprofiled."""
        return [t for t, p in zip(self._all_s(), self.profiled[self.warmup :]) if not p]

    def summary(self):
        all_s = self._all_s()
        end = time.perf_counter()  # after the sync: the GPU has finished every step
        kept = [(t, n) for t, n, p in zip(all_s, self.samples[self.warmup :], self.profiled[self.warmup :]) if not p]
        out = stats([t for t, _ in kept], sum(n for _, n in kept), timing="cuda-events" if self.cuda else "host")
        if all_s:
            out["wall_mean_step_ms"] = round((end - self.host[self.warmup]) / len(all_s) * 1e3, 3)
        out["profiled_steps_left_out"] = len(all_s) - len(kept)
        # Every step after the warm-up, in order (0.1 ms), and which ran under a profiler: where the stalls fall, and
        # whether the steps after doctor's window run at the plain pace (bench/doctor/real_overhead.sh reads them).
        out["step_ms"] = [round(t * 1e3, 1) for t in all_s]
        out["profiled_at"] = [i for i, p in enumerate(self.profiled[self.warmup :]) if p]
        return out


def stats(durations_s, samples, timing):
    """The JSON line's figures from measured step times (seconds) and the samples those steps took."""
    n = len(durations_s)
    if n == 0:
        return {"steps": 0, "timing": timing}
    s = sorted(durations_s)
    total = sum(durations_s)

    def pct(q):
        return s[min(n - 1, max(0, math.ceil(q * n) - 1))]  # nearest rank

    return {
        "steps": n,
        "mean_step_ms": round(total / n * 1e3, 3),
        "median_step_ms": round((s[(n - 1) // 2] + s[n // 2]) / 2 * 1e3, 3),
        "p90_step_ms": round(pct(0.9) * 1e3, 3),
        "max_step_ms": round(s[-1] * 1e3, 3),
        "samples_per_s": round(samples / total, 2) if total > 0 else None,
        "timing": timing,
    }


def emit(path, a, figures, **extra):
    """Prints the script's one JSON line on stdout."""
    import torch

    args = {k: v for k, v in vars(a).items() if isinstance(v, (str, int, float, bool, type(None)))}
    line = {"script": script_name(path), "args": args, **figures, **extra, "torch": torch.__version__}
    print(json.dumps(line), flush=True)


def progress(clock, steps, **figures):
    """One progress line on stderr (the caller decides how often)."""
    rest = " ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
    print(f"step {clock.steps}/{steps} {rest} host {clock.recent_ms():.1f} ms/step", file=sys.stderr, flush=True)
