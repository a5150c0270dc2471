"""The in-process probe: step records, DataLoader waits, allocator statistics, a profiler window,
memory snapshots and the out-of-memory snapshot, streamed as JSON lines (see docs/reference/doctor.md, "The probe").

Rules it keeps:
- the program runs as without doctor: nothing of the probe's is put on a user object (no hook on a module, no
  attribute on a model or optimizer); every patch is on torch, restorable (patches.py) and taken back once its use is
  over (at the first optimizer step for those only the fallbacks need, at the exit for the rest); the script sees
  its own environment (config.py); no signal handler, no `sys.excepthook`, no thread in `threading.enumerate()`;
  batches are read without calling into the tensors (batch.py); the profiler window never meets the script's own
  profiler (window.py); DataLoader workers and children that are not training processes run no probe;
- the script's code never runs on the probe's account: its objects (model, batch, optimizer, DataLoader, profiler,
  exception) are read only through safe.py, which cannot call a property, `__getattr__`, an override, a dict
  subclass's methods or a metaclass's `__instancecheck__`; what cannot be read that way stays unknown;
- its hooks go into torch's hook tables under keys of its own (hooks.py): the handle ids the script gets are the ones
  it gets without doctor; on Python >= 3.12 the model's calls are seen through sys.monitoring (calls.py), nothing in
  the tables at all; no frame of the probe's is inside a backward pass (patches.py, `_watch_backward_start`);
- no child process, and no library loaded or symbol looked up once the script runs (ticker.py, beacon.py: looked up
  at the boot): nothing a SIGCHLD handler or an audit hook of the script's meets; the profiler window stays in its
  thread and process (a child forked inside it takes its profiler state back; its own ops run with the script's
  torch function and dispatch modes off);
- no thread where nothing needs one: the background work runs inline at step ends (background.py); a timer
  (ticker.py) is started only for the duties about time passing while the training thread does nothing the probe
  sees: the watchdog where doctor diagnoses hangs (a process that uses CUDA, a rank of a distributed run; a stalled
  thread cannot report itself, and its stack is read from beside it), and the time window of a run without steps;
- what remains, and why (the equivalence cases that still differ, test/equivalence/known-differences.json): that
  timer's thread where it runs (glibc's helper thread, listed in /proc/self/task, never in `threading`); the files it opens (/proc readings, the run directory's traces and step
  counter), which an audit hook sees as `open` events; its live state (step counter, clock readings, queued
  records), which tracemalloc attributes to the probe's files; on Python < 3.12 a global forward pre-hook in torch's
  table while the model's next call must be read (loops without a DataLoader: between a step's end and the model's
  next call), which a trace or an export made then records;
- fail-open: every hook runs inside `Probe.guarded`; the first internal error is written once to
  stderr, the probe switches itself off, and the training goes on unchanged;
- it never imports torch: it waits for the script to import it (a post-import hook), and makes every import it
  needs then, never later from a hook;
- steps come from the best source the loop offers, on the thread that steps (steps.py), in this order:
  `gpuwise.step()` marks; the calls of the first optimizer that steps (a global optimizer step hook; on torch
  older than 2.0 the optimizer class's `step` is wrapped instead); DataLoader batches; backward passes
  (`torch.autograd.backward`, which `Tensor.backward` calls); forward calls of the outermost module; replays of
  the first CUDA graph replayed (`torch.cuda.CUDAGraph.replay`). A lower source counts steps only until a higher
  one appears, and only once the higher ones had their chance (an optimizer that exists but has not stepped in
  FALLBACK_AFTER calls is taken to drive nothing: a hand-written update, inference); graph replays also take over
  from a higher source that fell silent for GRAPH_TAKEOVER replays (a whole training step captured in a graph);
- a step costs the training thread two clock reads and a queued record, and past the first GPUWISE_FULL_STEPS steps
  of a steady optimizer loop only a counter, save in bursts of 32 steps in 1024 (sampling.py); the records are written
  in batches, what
  the socket does not take by the probe's background work (background.py): inline at step ends, or where a timer
  runs (ticker.py), from it, with no thread of the probe's known to Python between its runs;
- the outermost module and its input (model.py): found from its calls (sys.monitoring on Python >= 3.12, else global
  forward hooks in torch's tables under the probe's own keys), which stop at once; its later calls are seen only while the batch must be read off them;
- no step at all (real work without any of these): once CUDA is initialised and nothing step-like happened for
  GPUWISE_TIME_WINDOW_AFTER_S, a time window of GPUWISE_TIME_WINDOW_S is profiled on the main thread and analysed
  as one step (mainthread.py: a pending call, no signal);
- the profiler window opens once steps have settled (STEADY_WINDOW steps whose median is within STEADY_TOLERANCE of
  the ones before, the DataLoader wait no longer falling), at step GPUWISE_PROFILE_AT at the earliest, and at
  STEADY_CAP_FACTOR times that at the latest; in a distributed run rank 0 chooses and every rank profiles the same
  steps; it closes after its steps or by time; its trace is written by the background work;
- only processes that step (or crash after importing torch) send anything.

Environment (read at the boot, then removed from the script's view): GPUWISE_SOCKET (collector's Unix socket),
GPUWISE_RUN_DIR (files: traces, snapshots, and the records when no collector listens), GPUWISE_PROFILE_AT (the
window's first step, taken as given; without it the window opens at steady state, from step 10),
GPUWISE_PROFILE_STEPS (default 5, 0 = no profiler window), GPUWISE_TIME_WINDOW_AFTER_S (default 20; 0 = never) and
GPUWISE_TIME_WINDOW_S (default 5): the time window of a run without steps, GPUWISE_TIME_WINDOW_CPU=1 (test knob: arm
it at `import torch`, without CUDA), GPUWISE_GPU_TIMING=0 (no CUDA timing events: host step times only),
GPUWISE_MAX_STEPS (stop cleanly with exit status 0 after that many steps), GPUWISE_MEMORY_HISTORY=1 (record
allocation history from CUDA start instead of only in the window), GPUWISE_PROBE_FAULT=step|batch (test knob: raise
inside the probe's hook at step 2 / the second batch), GPUWISE_STALL_S (the watchdog's floor, default 30 s; 0 = no
watchdog; it runs where the process uses CUDA or is a rank of a distributed run), GPUWISE_STALL_REPEAT_S (how often a
stall is reported again, default 60 s), GPUWISE_FULL_STEPS (steps recorded in full before the steady loop is sampled, default 2048; "all": every step), GPUWISE_USER_PYTHONPATH (the
PYTHONPATH doctor found, restored for the script).
"""
import os
import sys
import threading

from . import config
from .core import Probe
from .patches import _TorchImportHook, wrap_optimizer_step

_PROBE = None

__all__ = ["Probe", "activate", "activate_in_run", "mark_step", "wrap_optimizer_step", "_TorchImportHook"]


def mark_step():
    """`gpuwise.step()`: the script marks the end of a step itself (loops without torch.optim)."""
    p = _PROBE
    if p is not None and p.torch is not None:
        p.guarded(p.steps.on_marker, threading.get_ident())


def activate_in_run(entry, ancestors, route):
    """Called by boot/attach.py for a process of a doctor run (`entry`: the run's registry entry; `ancestors`: the pids
    between this process and doctor; `route`: "site" or "path", how it was attached). A launcher (torchrun, accelerate
    launch) runs no probe and leaves the environment as it is: its ranks are started from it. A child of a probed
    process runs one only when it trains (a rank, a spawn child): config.runs_probe."""
    global _PROBE
    if _PROBE is not None:
        return None
    argv = getattr(sys, "orig_argv", None) or [sys.executable] + list(sys.argv)
    if config.is_launcher(argv):
        return None
    environment = config.RunEnvironment(entry.get("pythonpathTokens"), entry)
    environment.scrub_view()
    if not config.runs_probe(entry, ancestors, os.environ, argv):
        environment.withdraw()
        return None
    if route == "site":
        environment.withdraw()  # its children find the run through the same site hook
    # doctor's settings from the entry; a rank's own variables (RANK, LOCAL_RANK, WORLD_SIZE ...) from its environment.
    settings = dict(os.environ)
    settings.update(entry.get("settings") or {})
    _PROBE = start(settings, environment)
    _PROBE.sink.connect_early()
    return _PROBE


def activate(env=None, boot_dir=None):
    """Called by the boot sitecustomize (`boot_dir`: its folder). Does nothing unless gpuwise doctor set the
    environment; a launcher (torchrun, accelerate launch) and a child that is not a training process run no probe
    (config.py)."""
    global _PROBE
    env = os.environ if env is None else env
    if _PROBE is not None or not (env.get("GPUWISE_SOCKET") or env.get("GPUWISE_RUN_DIR")):
        return None
    pythonpath = None
    if boot_dir is not None:
        argv = getattr(sys, "orig_argv", None) or [sys.executable] + list(sys.argv)
        if config.is_launcher(argv):
            return None  # its ranks need the environment as it is; it trains nothing itself
        pythonpath = config.user_pythonpath(env, boot_dir)
        if not config.probe_child(env, argv):
            config.scrub_view(boot_dir)
            config.withdraw_c_environment(pythonpath)
            return None
        env = dict(env)
        config.scrub_view(boot_dir)
        config.mark_parent()
    _PROBE = start(env, config.DirectEnvironment(pythonpath) if boot_dir is not None else None)
    if boot_dir is not None:
        _PROBE.sink.connect_early()
    return _PROBE


def start(env, environment=None):
    """A probe installed now if torch is loaded, else as soon as the script imports it (also the notebook's).
    `environment`: what the probe takes out of the C environment once the process trains (None: nothing)."""
    probe = Probe(env, environment)
    if "torch" in sys.modules:
        probe.on_torch_imported(sys.modules["torch"])
    else:
        probe.import_hook = _TorchImportHook(probe)
        sys.meta_path.insert(0, probe.import_hook)
    return probe
