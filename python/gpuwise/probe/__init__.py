"""The in-process probe: step records, DataLoader waits, allocator statistics, a profiler window,
memory snapshots and the out-of-memory snapshot, streamed as JSON lines (see docs/doctor.md).

Rules it keeps:
- fail-open: every hook runs inside `_guarded`; the first internal error is written once to
  stderr, the probe switches itself off, and the training goes on unchanged;
- it never imports torch: it waits for the script to import it (a post-import hook);
- the model is found once, at the first step, among live modules (no forward hooks);
- steps come from the best source the loop offers, in this order: `gpuwise.step()` marks; the calls
  of the first optimizer that steps (a global optimizer step hook; on torch older than 2.0 the
  optimizer class's `step` is wrapped instead); DataLoader batches; backward passes
  (`torch.autograd.backward`, which `Tensor.backward` calls); forward calls of the outermost module;
  replays of the first CUDA graph replayed (`torch.cuda.CUDAGraph.replay`).
  A lower source counts steps only until a higher one appears, and only once the higher ones had
  their chance (an optimizer that exists but has not stepped in FALLBACK_AFTER calls is taken to
  drive nothing: a hand-written update, inference); graph replays also take over from a higher source
  that fell silent for GRAPH_TAKEOVER replays (a whole training step captured in a graph);
- no step at all (real work without any of these): once CUDA is initialised and nothing step-like
  happened for GPUWISE_TIME_WINDOW_AFTER_S, a time window of GPUWISE_TIME_WINDOW_S is profiled and
  analysed as one step. torch.profiler records the CPU ops of the thread that starts it only (a start
  from a watcher thread recorded none of the main thread's ops on torch 1.13), so the watcher thread
  asks the main thread to start and stop it: a Python signal handler, run by the interpreter on the main
  thread between bytecodes, triggered with `_thread.interrupt_main(signum)` (no OS signal is sent);
- the outermost module is found from its calls: global forward hooks watch the first module calls
  (depth 0 = a call no other module made), then step aside for one pre-hook on that module, which
  reads the batch (leading dimension of its first tensor argument, tokens for integer inputs; the
  second dimension when the model is sequence-first: an RNN or Transformer module with
  `batch_first=False`) and the autocast state whatever built the batch (`get_batch()`, slicing, a
  DataLoader);
- the profiler window opens once steps have settled (STEADY_WINDOW steps whose median is within
  STEADY_TOLERANCE of the ones before, the DataLoader wait no longer falling), at step
  GPUWISE_PROFILE_AT at the earliest, and at STEADY_CAP_FACTOR times that at the latest;
  in a distributed run rank 0 chooses and every rank profiles the same steps (_aligned_reason);
- only processes that step (or crash after importing torch) send anything, so a torchrun
  launcher or DataLoader workers stay silent.

Environment: GPUWISE_SOCKET (collector's Unix socket), GPUWISE_RUN_DIR (files: traces,
snapshots, and the records when no collector listens), GPUWISE_PROFILE_AT (the window's first step,
taken as given; without it the window opens at steady state, from step 10),
GPUWISE_PROFILE_STEPS (default 5, 0 = no profiler window), GPUWISE_TIME_WINDOW_AFTER_S (default 20;
0 = never) and GPUWISE_TIME_WINDOW_S (default 5): the time window of a run without steps,
GPUWISE_TIME_WINDOW_CPU=1 (test knob: arm it at `import torch`, without CUDA), GPUWISE_GPU_TIMING=0 (no CUDA timing
events: host step times only), GPUWISE_MAX_STEPS (stop cleanly with
exit status 0 after that many steps), GPUWISE_MEMORY_HISTORY=1 (record allocation history from
CUDA start instead of only in the window), GPUWISE_PROBE_FAULT=step|batch (test knob: raise
inside the probe's hook at step 2 / the second batch), GPUWISE_STALL_S (the watchdog's floor, default
30 s; 0 = no watchdog), GPUWISE_STALL_REPEAT_S (how often a stall is reported again, default 60 s).

The watchdog: a daemon thread, started with the clock, that wakes about once a second and reads four
counters the hooks already keep (steps, batches, forwards, backward passes). When none has moved for
max(GPUWISE_STALL_S, 10 x the median step) it sends a `stall` record with the stepping thread's
Python stack, and again every GPUWISE_STALL_REPEAT_S while it lasts. It costs the training loop
nothing per step, and any error of its own ends it silently.
"""
import os
import sys

from .core import Probe
from .patches import _TorchImportHook

_PROBE = None


def mark_step():
    """`gpuwise.step()`: the script marks the end of a step itself (loops without torch.optim)."""
    if _PROBE is not None and _PROBE.torch is not None:
        _PROBE._guarded(_PROBE._on_marker)


def activate(env=None):
    """Called by the boot sitecustomize. Does nothing unless gpuwise doctor set the environment."""
    global _PROBE
    env = os.environ if env is None else env
    if _PROBE is not None or not (env.get("GPUWISE_SOCKET") or env.get("GPUWISE_RUN_DIR")):
        return None
    _PROBE = Probe(env)
    if "torch" in sys.modules:
        _PROBE.on_torch_imported(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook(_PROBE))
    return _PROBE

