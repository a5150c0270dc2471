"""A trial of `gpuwise tune --plan`: the plan's fixes made by the probe, without an edit to the script.

Only in a trial: doctor's runs never set GPUWISE_TRIAL_SETTINGS, and without it nothing here is imported or run (the
probe behaves exactly as without this module). The setting is one JSON object (src/tune/planTrials.ts, TrialSettings):

    {"loader": {"numWorkers": 14, "pinMemory": true, "persistentWorkers": true, "prefetchFactor": 4,
                "match": {"batchSize": 8, "numWorkers": 2}},
     "tf32": true, "cudnnBenchmark": true, "autocast": "bf16", "channelsLast": true, "compile": "default"}

- loader: `DataLoader.__init__` is wrapped; a loader built with the training loader's batch size and worker count as
  the diagnosis saw them (`match`; a key left out matches any) gets the other keys as its arguments. persistent_workers
  and prefetch_factor are only given with workers (torch refuses them without).
- tf32: `torch.backends.cuda.matmul.allow_tf32` and cuDNN's (`set_float32_matmul_precision("high")` where it exists);
  cudnnBenchmark: `torch.backends.cudnn.benchmark`. Set when torch is imported (a script that sets them itself later
  wins).
- autocast (bf16), channelsLast (model and its 4-D inputs), compile ("default" or "reduce-overhead"): made on the
  training model, the outermost module the probe finds (model.py), from its next call on: autocast by its forward
  wrapped in a `with torch.autocast` block, channels_last by `module.to(memory_format=...)` and a pre-hook on its
  inputs, compile by `module.compile()` (torch >= 2.2; else its forward compiled on the instance).
  All of these are GPU levers: without CUDA they are left as they are and reported "not applied: no CUDA".

What was applied, what was not and why, and the first and last losses seen (the scalar a `Tensor.backward()` starts
from, read at the exit, never during the steps: no sync is added) are written to RUN_DIR/trial-PID.json at the
exit (and at the install, in case the process dies), with the steadiness stop's decision (steady.py: the trial ends
once its steady mean is known; GPUWISE_TRIAL_STOP). Every change is taken back at the exit (the patches' registry).
"""
import atexit
import functools
import json
import os

SETTING = "GPUWISE_TRIAL_SETTINGS"
# Losses kept: the first ones (the divergence test against the baseline's) and the last ones.
FIRST_LOSSES = 8
LAST_LOSSES = 8


def parse(text):
    """The trial's settings (a dict), or None when absent or not a JSON object."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class Trial(object):
    def __init__(self, probe, settings):
        self.probe = probe
        self.settings = settings
        self.applied = []  # {"lever": name, ...details}
        self.skipped = []  # {"lever": name, "why": text}
        self.loaders = []  # each overridden loader: {"from": {...}, "to": {...}}
        self.first_losses = []
        self.last_losses = []
        self.model_done = False
        self.cuda = False
        self.errors = []
        self.steady = None  # the steadiness stop (steady.py), when GPUWISE_TRIAL_STOP asks for one

    # ---------- at `import torch` ----------

    def install(self, torch):
        p = self.probe.patches
        s = self.settings
        try:
            self.cuda = bool(torch.cuda.is_available())
        except Exception:
            self.cuda = False
        if isinstance(s.get("loader"), dict):
            self._install_loader(torch, p, s["loader"])
        if s.get("tf32"):
            self._flags(torch, p, "tf32")
        if s.get("cudnnBenchmark"):
            self._flags(torch, p, "cudnnBenchmark")
        model_levers = [k for k in ("autocast", "channelsLast", "compile") if s.get(k)]
        if model_levers:
            if not self.cuda:
                for k in model_levers:
                    self.skipped.append({"lever": k, "why": "not applied: no CUDA"})
            else:
                self._watch_model()
        self._install_loss(torch, p)
        from . import steady

        self.steady = steady.install(self.probe, self.probe.cfg.trial_stop)
        self.probe.steps.steady = self.steady
        atexit.register(self.write)
        self.write()

    def _flags(self, torch, p, lever):
        if not self.cuda:
            self.skipped.append({"lever": lever, "why": "not applied: no CUDA"})
            return
        if lever == "tf32":
            matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
            before = (matmul.allow_tf32, cudnn.allow_tf32)
            setp = getattr(torch, "set_float32_matmul_precision", None)
            getp = getattr(torch, "get_float32_matmul_precision", None)
            precision = getp() if getp is not None else None
            matmul.allow_tf32 = True
            cudnn.allow_tf32 = True
            if setp is not None:
                setp("high")

            def undo():
                matmul.allow_tf32, cudnn.allow_tf32 = before
                if setp is not None and precision is not None:
                    setp(precision)

            p.add_undo("trial-tf32", undo)
            self.applied.append({"lever": "tf32", "before": {"matmulAllowTf32": before[0], "float32MatmulPrecision": precision}})
        else:
            cudnn = torch.backends.cudnn
            before = cudnn.benchmark
            cudnn.benchmark = True
            p.add_undo("trial-cudnn-benchmark", lambda: setattr(cudnn, "benchmark", before))
            self.applied.append({"lever": "cudnnBenchmark", "before": before})

    # ---------- the DataLoader ----------

    def _install_loader(self, torch, p, want):
        import inspect

        import torch.utils.data as data

        DataLoader = data.DataLoader
        original = DataLoader.__dict__["__init__"]
        try:
            signature = inspect.signature(original)
        except (TypeError, ValueError):
            self.skipped.append({"lever": "loader", "why": "DataLoader.__init__ has no signature to read"})
            return
        match = want.get("match") if isinstance(want.get("match"), dict) else {}
        trial = self
        names = {"numWorkers": "num_workers", "pinMemory": "pin_memory", "persistentWorkers": "persistent_workers", "prefetchFactor": "prefetch_factor"}

        def __init__(loader, *args, **kwargs):
            try:
                bound = signature.bind(loader, *args, **kwargs)
            except TypeError:
                return original(loader, *args, **kwargs)  # the call fails as it would: torch says why
            a = bound.arguments
            extra = a.get("kwargs") if isinstance(a.get("kwargs"), dict) else None
            get = lambda k, d: (extra.get(k, d) if extra is not None and k in extra else a.get(k, d))  # noqa: E731
            have = {"batchSize": get("batch_size", 1), "numWorkers": get("num_workers", 0)}
            if all(match.get(k) is None or match.get(k) == have[k] for k in have):
                before = {k: get(v, None) for k, v in names.items()}
                to = {}
                for key, arg in names.items():
                    if want.get(key) is not None:
                        to[arg] = want[key]
                workers = to.get("num_workers", have["numWorkers"]) or 0
                if workers == 0:
                    to.pop("persistent_workers", None)
                    to.pop("prefetch_factor", None)
                if to:
                    for arg, v in to.items():
                        if extra is not None and arg in extra:
                            extra[arg] = v
                        else:
                            a[arg] = v
                    trial.loaders.append({"from": before, "to": {k: to[v] for k, v in names.items() if v in to}})
            return original(*bound.args, **bound.kwargs)

        functools.update_wrapper(__init__, original)
        p.replace("trial-loader", DataLoader, "__init__", __init__)
        self.applied.append({"lever": "loader", "settings": {k: v for k, v in want.items() if k != "match"}, "match": match})

    # ---------- the training model ----------

    def _watch_model(self):
        trial = self

        def on_model(module):
            if trial.model_done:
                return
            trial.model_done = True
            try:
                trial._on_model(module)
            except Exception as e:  # a lever that cannot be made: said, never the training's end
                trial.errors.append("%s: %s" % (type(e).__name__, e))
            trial.write()

        self.probe.model.on_discovered(on_model)  # after the probe's own reading of the model (modelwatch.py)

    def _on_model(self, module):
        torch = self.probe.torch
        s = self.settings
        p = self.probe.patches
        if s.get("channelsLast"):
            self._channels_last(torch, p, module)
        if s.get("autocast"):
            self._autocast(torch, p, module, s["autocast"])
        if s.get("compile"):
            self._compile(torch, module, s["compile"])

    def _channels_last(self, torch, p, module):
        convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
        if not convs:
            self.skipped.append({"lever": "channelsLast", "why": "the model has no 2-D convolution"})
            return
        module.to(memory_format=torch.channels_last)
        fmt = torch.channels_last

        def pre(mod, args):
            return tuple(x.contiguous(memory_format=fmt) if isinstance(x, torch.Tensor) and x.dim() == 4 else x for x in args)

        h = module.register_forward_pre_hook(pre)
        p.add_undo("trial-channels-last", h.remove)
        self.applied.append({"lever": "channelsLast", "convolutions": len(convs)})

    def _autocast(self, torch, p, module, dtype):
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype)
        if dt is None:
            self.skipped.append({"lever": "autocast", "why": "unknown dtype %r" % (dtype,)})
            return
        # The forward wrapped in a `with` block, not a context entered in a pre-hook and left in a hook: torch.compile
        # traces a `with torch.autocast` but not one opened and closed across hooks (a compiled Trainer GPT-2 failed
        # with "'autocast' object has no attribute 'prev'").
        had_own = "forward" in module.__dict__
        inner = module.forward

        @functools.wraps(inner)  # the signature stays readable (the Trainer inspects the forward's arguments)
        def forward(*args, **kwargs):
            with torch.autocast("cuda", dtype=dt):
                return inner(*args, **kwargs)

        module.forward = forward

        def undo():
            if module.__dict__.get("forward") is forward:
                if had_own:
                    module.forward = inner
                else:
                    del module.forward

        p.add_undo("trial-autocast", undo)
        self.applied.append({"lever": "autocast", "dtype": dtype})

    def _compile(self, torch, module, mode):
        if getattr(torch, "compile", None) is None:
            self.skipped.append({"lever": "compile", "why": "this torch has no torch.compile"})
            return
        kwargs = {"mode": mode} if mode not in (None, "default", True) else {}
        if hasattr(module, "compile") and callable(getattr(type(module), "compile", None)):
            module.compile(**kwargs)
            how = "module.compile()"
        else:
            module.forward = torch.compile(module.forward, **kwargs)
            how = "forward compiled on the instance"
        self.applied.append({"lever": "compile", "mode": mode, "how": how})

    # ---------- the losses ----------

    def _install_loss(self, torch, p):
        Tensor = torch.Tensor
        original = Tensor.__dict__.get("backward")
        if original is None:
            return
        first, last = self.first_losses, self.last_losses

        def backward(t, *args, **kwargs):
            try:
                if type(t) is Tensor and t.numel() == 1:
                    held = t.detach()
                    if len(first) < FIRST_LOSSES:
                        first.append(held)
                    else:
                        last.append(held)
                        del last[:-LAST_LOSSES]
            except Exception:
                pass
            return original(t, *args, **kwargs)

        functools.update_wrapper(backward, original)
        p.replace("trial-loss", Tensor, "backward", backward)

    # ---------- what happened ----------

    def write(self):
        run_dir = self.probe.cfg.run_dir
        if not run_dir or self.probe.pid != os.getpid():
            return
        out = {
            "pid": os.getpid(),
            "rank": self.probe.cfg.rank,
            "cuda": self.cuda,
            "settings": self.settings,
            "applied": self.applied,
            "skipped": self.skipped,
            "loaders": self.loaders,
            "modelFound": self.model_done,
            "errors": self.errors,
            "firstLosses": _floats(self.first_losses),
            "lastLosses": _floats(self.last_losses),
            "stop": self.steady.decision if self.steady is not None else None,
        }
        try:
            path = os.path.join(run_dir, "trial-%d.json" % os.getpid())
            with open(path + ".tmp", "w") as f:
                json.dump(out, f)
            os.replace(path + ".tmp", path)
        except (OSError, ValueError, TypeError):
            pass


def _floats(tensors):
    out = []
    for t in tensors:
        try:
            v = float(t.item())
        except Exception:
            continue
        out.append(v if v == v and v not in (float("inf"), float("-inf")) else str(v))
    return out


def install(probe, torch):
    """Called at the probe's install when GPUWISE_TRIAL_SETTINGS is set (core.py)."""
    settings = parse(probe.cfg.trial)
    if settings is None:
        return None
    t = Trial(probe, settings)
    t.install(torch)
    return t
