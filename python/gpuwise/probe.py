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
  DataLoader); accelerate (and a Hugging Face Trainer through it) enters autocast inside the forward
  it wraps, after that hook, so the model record also carries accelerate's own mixed-precision setting;
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
import atexit
import functools
import os
import platform
import socket
import sys
import threading
import time
import weakref

# Relative: under doctor this package is loaded as `_gpuwise_probe`, leaving `gpuwise` to the user.
from . import PROTOCOL_VERSION, __version__
from .transport import Sink

_PROBE = None

# Gradient accumulation over more micro-batches than this is rare; a loop that fetched this many
# batches (or ran this many backward passes) without any optimizer step is taken to have none.
FALLBACK_AFTER = 64
# Steady state: the median of the last STEADY_WINDOW host step times within STEADY_TOLERANCE of the
# median of the STEADY_WINDOW before (warm-up: cudnn.benchmark, allocator growth, compile, the
# DataLoader's workers filling their queues); at most STEADY_CAP_FACTOR x the earliest step.
STEADY_WINDOW = 5
STEADY_TOLERANCE = 0.10
STEADY_CAP_FACTOR = 5
# A distributed run's window starts this many steps after rank 0 chose it: ranks in lockstep are at most a step or
# two apart, so every rank reads the plan before its first step.
WINDOW_LEAD = 3
WINDOW_PLAN_FILE = "profile-window.json"
# The watchdog: a stall is no progress for max(floor, STALL_STEP_FACTOR x the median step); frames kept of its stack.
STALL_STEP_FACTOR = 10
STALL_STACK_FRAMES = 30
# Step sources by precedence: a source counts steps until a higher one shows up.
SOURCE_RANK = {"graph": 0, "forward": 1, "backward": 2, "batch": 3, "optimizer": 4, "marker": 5}
# Replays of the first CUDA graph with no step of a higher source between them: the graph is the loop.
GRAPH_TAKEOVER = 8
# The time window's trigger: a Python handler for this signal, triggered on the main thread without sending it.
_TIME_WINDOW_SIGNAL = "SIGRTMAX"
# Modules that read a `batch_first` flag: their input is [seq, batch, ...] when it is False (torch's default).
_SEQ_FIRST_CLASSES = ("RNNBase", "RNN", "LSTM", "GRU", "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer", "MultiheadAttention")


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


class _TorchImportHook(object):
    """A meta path finder that runs the probe's install right after `import torch` finishes."""

    def __init__(self, probe):
        self.probe = probe
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.busy:
            return None
        import importlib.util

        self.busy = True
        try:
            spec = importlib.util.find_spec("torch")
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        original = loader.exec_module
        probe = self.probe
        hook = self

        def exec_module(module):
            original(module)
            try:
                sys.meta_path.remove(hook)
            except ValueError:
                pass
            probe.on_torch_imported(module)

        loader.exec_module = exec_module
        return spec


def _thread_cpu():
    """(thread id, CPU seconds of the calling thread): a syscall of about a microsecond, no GPU work; None if unknown."""
    try:
        return (threading.get_ident(), time.thread_time())
    except Exception:  # a platform without a per-thread CPU clock
        return None


def _int_env(env, name, default, minimum):
    try:
        v = int(env.get(name, "") or default)
    except ValueError:
        return default
    return max(minimum, v)


def _float_env(env, name, default):
    try:
        v = float(env.get(name, "") or default)
    except ValueError:
        return default
    return max(0.0, v)


def _first_int(env, names):
    for n in names:
        v = env.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                pass
    return None


class Probe(object):
    def __init__(self, env):
        self.env = env
        self.run_dir = env.get("GPUWISE_RUN_DIR") or None
        self.sink = Sink(env.get("GPUWISE_SOCKET"), self.run_dir)
        self.rank = _first_int(env, ["RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"])
        self.local_rank = _first_int(env, ["LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"])
        self.world_size = _first_int(env, ["WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"])
        self.tag = "rank%d" % (self.rank or 0) if self.rank is not None else "pid%d" % os.getpid()
        self.profile_at = _int_env(env, "GPUWISE_PROFILE_AT", 10, 1)
        # A step the user named (doctor --profile-at) is taken as it is; by default the window waits for steady state.
        self.profile_fixed = bool(env.get("GPUWISE_PROFILE_AT"))
        self.profile_steps = _int_env(env, "GPUWISE_PROFILE_STEPS", 5, 0)
        self.max_steps = _int_env(env, "GPUWISE_MAX_STEPS", 0, 0) or None
        self.memory_history_always = env.get("GPUWISE_MEMORY_HISTORY") == "1"
        self.fault = env.get("GPUWISE_PROBE_FAULT") or None
        self.stall_floor_s = _float_env(env, "GPUWISE_STALL_S", 30.0)
        self.stall_repeat_s = max(0.05, _float_env(env, "GPUWISE_STALL_REPEAT_S", 60.0))
        self.watchdog = None
        self.torch = None
        self.disabled = False
        self.ended = False
        self.announced = False
        self.model_sent = None  # None, "time" (with the time window), "step" (at the first step)
        self.lock = threading.RLock()
        # Step bookkeeping
        self.step = 0
        self.primary_optimizer = None  # weakref to the optimizer whose steps count
        self.last_boundary = None  # perf_counter() at the end of the previous step
        # The stepping thread's CPU time at that boundary, (thread id, thread_time()): the host's own work per step
        # (a DataLoader queue wait or a GIL wait sleeps and does not count; a spin-waiting CUDA sync does).
        self.last_cpu = None
        self._reset_step_counters()  # what the current step has seen: DataLoader waits, batches, the model's input
        self.batch_calls = 0
        # GPU step times: a timing event recorded at each step end on the current stream; the time
        # between two completed events is the step as the GPU ran it (idle gaps included), which
        # host timing only matches once the launch queue is full.
        self.gpu_events = []  # [(step, event)] not yet measured, oldest first
        self.gpu_events_failed = env.get("GPUWISE_GPU_TIMING") == "0"  # off: host timing only
        # What marks steps: None until the first one, then a key of SOURCE_RANK.
        self.step_source = None
        self.optimizer_built = False
        self.optimizer_stepped = False
        self.backward_calls = 0
        # The outermost module: watched through global hooks until found, then one pre-hook on it.
        self.root_ref = None
        self.root_depth = 0
        self.root_watch = []  # handles of the global hooks
        self.forward_calls = 0
        self.autocast_dtype = None
        # How the batch is read off the outermost module's input: (dimension, what showed it), set when the root is found.
        self.batch_dim = 0
        self.batch_dim_evidence = None
        self.root_input_shape = None  # the first root call's first tensor's shape (to check the batch dimension)
        # CUDA graph replays: the first graph replayed, and its replays since another source ended a step.
        self.primary_graph = None
        self.graph_replays = 0
        self.replays_since_other = 0
        # The time window of a run without steps (see the module docstring).
        self.time_after_s = _float_env(env, "GPUWISE_TIME_WINDOW_AFTER_S", 20.0)
        self.time_window_s = _float_env(env, "GPUWISE_TIME_WINDOW_S", 5.0)
        self.time_cpu = env.get("GPUWISE_TIME_WINDOW_CPU") == "1"
        self.time_signal = None  # the signal number whose handler is ours, once installed
        self.time_armed_at = None  # perf_counter() when the watcher started (CUDA initialised)
        self.time_state = None  # None, "open" (profiling), "done"
        self.time_opened_at = None
        self.last_activity = None  # perf_counter() of the last step-like event (batch, forward, backward, replay ...)
        self.host_step_times = []  # recent host step times (s), for the steady-state test
        self.wait_times = []
        # Profiler window and snapshots
        self.prof = None
        self.prof_step_fn = None
        self.prof_first_step = None
        self.window_plan = None  # (first step, reason) of a distributed run's common window
        self.own_ready_at = None  # the step at which this rank would have opened its window alone
        self.history_on = False
        self.oom_snapshot = None
        self.exception = None
        try:
            # A forked child (a DataLoader worker) has no watchdog, and the lock may have been held by it at the fork.
            os.register_at_fork(after_in_child=self._after_fork)
        except Exception:
            pass

    def _after_fork(self):
        self.lock = threading.RLock()
        self.watchdog = None

    # ---------- fail-open plumbing ----------

    def _guarded(self, fn, *args):
        if self.disabled:
            return None
        try:
            return fn(*args)
        except SystemExit:
            raise  # only the probe's own --steps stop raises it
        except Exception as e:
            self._fail(e)
            return None

    def _fail(self, e):
        with self.lock:
            if self.disabled:
                return
            self.disabled = True
        try:
            sys.stderr.write("gpuwise probe: internal error, probe switched off, training continues: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass
        try:
            self._send("probe-error", {"error": "%s: %s" % (type(e).__name__, e), "step": self.step})
        except Exception:
            pass
        try:
            self._stop_profiler(export=True)
        except Exception:
            pass

    def _send(self, kind, fields, wait_s=None):
        rec = {"v": PROTOCOL_VERSION, "type": kind, "pid": os.getpid(), "rank": self.rank, "t": time.time()}
        rec.update(fields)
        if wait_s is None:
            with self.lock:
                self.sink.send(rec)
            return
        # From the watchdog: never wait long on a main thread that is itself stuck sending.
        if not self.lock.acquire(timeout=wait_s):
            return
        try:
            self.sink.send(rec)
        finally:
            self.lock.release()

    # ---------- the watchdog ----------

    def _ensure_watchdog(self):
        if self.watchdog is not None or self.stall_floor_s <= 0:
            return
        ident = threading.get_ident()  # the thread that steps (the main thread, as a rule)
        t = threading.Thread(target=self._watchdog_loop, args=(ident,), name="gpuwise-watchdog", daemon=True)
        self.watchdog = t
        t.start()

    def _stall_threshold(self):
        times = list(self.host_step_times)
        return max(self.stall_floor_s, STALL_STEP_FACTOR * _median(times)) if times else self.stall_floor_s

    def _watchdog_loop(self, ident):
        try:
            poll = min(1.0, max(0.05, self.stall_floor_s / 10.0))
            seen = None
            since = time.perf_counter()
            sent_at = None
            while not self.disabled and not self.ended:
                time.sleep(poll)
                progress = (self.step, self.batch_calls, self.forward_calls, self.backward_calls)
                now = time.perf_counter()
                if progress != seen:
                    seen, since, sent_at = progress, now, None
                    continue
                threshold = self._stall_threshold()
                if now - since < threshold or (sent_at is not None and now - sent_at < self.stall_repeat_s):
                    continue
                frame = sys._current_frames().get(ident)
                if frame is None:
                    return  # the stepping thread is gone
                stack = _format_stack(frame)
                frame = None
                last = self.last_boundary if self.last_boundary is not None else since
                self._send(
                    "stall",
                    {"step": self.step + 1, "sinceStepS": max(0.0, now - last), "thresholdS": threshold, "stack": stack},
                    wait_s=2.0,
                )
                sent_at = now
        except Exception:
            return  # fail-open: the watchdog ends silently, the probe and the training go on

    # ---------- installation ----------

    def on_torch_imported(self, torch):
        self._guarded(self._install, torch)

    def _install(self, torch):
        self.torch = torch
        import torch.optim
        import torch.utils.data.dataloader as dl

        probe = self
        # Steps: the global post-step hook (torch >= 2.0), else wrap each optimizer class's step.
        register = getattr(torch.optim.Optimizer, "register_optimizer_step_post_hook", None)
        if register is None:
            # torch 2.x: a function of the torch.optim.optimizer module, which torch.optim's
            # namespace does not always expose as an attribute: import it by name.
            try:
                import importlib

                register = getattr(importlib.import_module("torch.optim.optimizer"), "register_optimizer_step_post_hook", None)
            except Exception:
                register = None
        if register is not None:
            register(lambda opt, args, kwargs: probe._guarded(probe._on_optimizer_step, opt))
            self.step_hook = "optimizer-step-post-hook"
            # Only to know whether the script builds an optimizer at all (the batch fallback).
            original_init = torch.optim.Optimizer.__init__

            def __init__(self_opt, *args, **kwargs):
                probe.optimizer_built = True
                original_init(self_opt, *args, **kwargs)

            torch.optim.Optimizer.__init__ = __init__
        else:
            self._wrap_optimizer_classes(torch)
            self.step_hook = "optimizer-step-wrapper"

        # DataLoader waits: time every __next__ of a DataLoader iterator.
        original_next = dl._BaseDataLoaderIter.__next__

        def __next__(it):
            if probe.disabled:
                return original_next(it)
            t0 = time.perf_counter()
            batch = original_next(it)  # StopIteration and the loader's own errors pass unchanged
            probe._guarded(probe._on_batch, t0, time.perf_counter() - t0, batch)
            return batch

        __next__.__wrapped__ = original_next
        dl._BaseDataLoaderIter.__next__ = __next__

        # Backward passes: Tensor.backward calls torch.autograd.backward by attribute, so one wrapper sees both.
        original_backward = torch.autograd.backward

        def backward(*args, **kwargs):
            out = original_backward(*args, **kwargs)
            if not probe.disabled:
                probe._guarded(probe._on_backward)
            return out

        backward.__wrapped__ = original_backward
        torch.autograd.backward = backward
        self._watch_roots(torch)
        self._wrap_graph_replay(torch)
        self._install_time_window()
        if self.time_cpu:
            self._arm_time_window()  # test knob: any torch process counts as device work

        # CUDA: attach the OOM observer (and history) as soon as CUDA initialises.
        lazy_call = getattr(torch.cuda, "_lazy_call", None)
        if lazy_call is not None:
            lazy_call(lambda: probe._guarded(probe._on_cuda_init))

        prev_hook = sys.excepthook

        def excepthook(etype, value, tb):
            probe._guarded(probe._on_exception, etype, value)
            prev_hook(etype, value, tb)

        sys.excepthook = excepthook
        atexit.register(lambda: self._guarded(self._on_exit))

    def _wrap_optimizer_classes(self, torch):
        probe = self
        Optimizer = torch.optim.Optimizer
        original_init = Optimizer.__init__

        def __init__(self_opt, *args, **kwargs):
            probe.optimizer_built = True
            original_init(self_opt, *args, **kwargs)
            probe._guarded(probe.wrap_optimizer_step, type(self_opt))

        Optimizer.__init__ = __init__

    def wrap_optimizer_step(self, cls):
        """Wraps the `step` that instances of optimizer class `cls` run (torch < 2.0 has no global step hook); once
        per defining class, marked. Also used by the notebook for classes built before the probe existed."""
        torch = self.torch
        # The class in the MRO whose `step` runs (a user's subclass may inherit AdamW's); the base class's is abstract.
        owner = next((c for c in cls.__mro__ if "step" in c.__dict__), None)
        if owner is None or owner is torch.optim.Optimizer or owner.__dict__.get("_gpuwise_wrapped"):
            return
        step = owner.__dict__["step"]
        probe = self

        def step_wrapper(self_opt, *args, **kwargs):
            out = step(self_opt, *args, **kwargs)
            probe._guarded(probe._on_optimizer_step, self_opt)
            return out

        # Keeps torch's own markers (1.x sets `hooked` on the profiled step) and the name.
        functools.update_wrapper(step_wrapper, step)
        owner.step = step_wrapper
        owner._gpuwise_wrapped = True

    # ---------- hooks ----------

    def _on_batch(self, t0, wait_s, batch):
        self.last_activity = t0
        if self.last_boundary is None:
            self.last_boundary = t0  # the loop starts with its first batch
            self.last_cpu = _thread_cpu()
            self._ensure_watchdog()
        self.batch_calls += 1
        if self.fault == "batch" and self.batch_calls == 2:
            raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=batch")
        if self._takes_over("batch") and self.step_source != "batch" and self.batch_calls > 1 and (not self.optimizer_built or self.batch_calls > FALLBACK_AFTER):
            self.step_source = "batch"
        if self.step_source == "batch" and self.batches > 0:
            # The previous batch's step ends where this fetch starts (its wait belongs to the next step).
            self._end_step(t0, "batch")
        self.data_wait_s += wait_s
        self.batches += 1
        n = _batch_size(self.torch, batch)
        if n is None:
            self.samples_known = False
        else:
            self.samples += n
        tok = _batch_tokens(self.torch, batch)
        if tok is None:
            self.tokens_known = False
        else:
            self.tokens += tok[0]
            self.seq_len = tok[1]

    def _takes_over(self, source):
        """Whether `source` may count steps now: no higher source is counting them."""
        return self.step_source is None or SOURCE_RANK[source] >= SOURCE_RANK[self.step_source]

    def _on_backward(self):
        now = time.perf_counter()
        self.last_activity = now
        self.backward_calls += 1
        self.root_depth = 0  # a forward that raised left the watch's depth behind: a backward ends it
        if not self._takes_over("backward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.backward_calls <= FALLBACK_AFTER:
            return  # an optimizer exists: give it the chance to step (gradient accumulation)
        if self.step_source in (None, "forward", "graph"):
            if self.last_boundary is None or self.step_source in ("forward", "graph"):
                # The first backward ends no step: the clock starts here (a whole step lies between two).
                self._start_clock(now, "backward")
                return
        self._end_step(now, "backward")

    def _watch_roots(self, torch):
        """Global forward hooks until the outermost module is known (see the module docstring)."""
        mod = getattr(torch.nn.modules, "module", None)
        pre = getattr(mod, "register_module_forward_pre_hook", None)
        post = getattr(mod, "register_module_forward_hook", None)
        if pre is None or post is None:
            return
        probe = self

        def on_pre(module, args):
            # Tracing first: inside a graph being compiled nothing of ours belongs, nor a guard on our state.
            if _compiling(torch) or probe.root_ref is not None or probe.disabled:
                return None
            if probe.root_depth == 0:
                probe._guarded(probe._on_root_call, module, args)
            probe.root_depth += 1
            return None

        def on_post(module, args, out):
            if probe.root_depth > 0 and not _compiling(torch):
                probe.root_depth -= 1
            return None

        self.root_watch.append(pre(on_pre))
        try:
            self.root_watch.append(post(on_post, always_call=True))
        except TypeError:  # torch < 2.0: no always_call (a forward that raises leaves depth 1 until a backward)
            self.root_watch.append(post(on_post))

    def _on_root_call(self, module, args):
        # The first call at depth 0 of a module with parameters is the model's: a loss module has none.
        # Settling at once takes the global hooks away before torch.compile traces the model, so no
        # compiled graph ever depends on them (removing them later would force a recompile).
        if next(iter(module.parameters()), None) is None:
            return
        for h in self.root_watch:
            h.remove()
        self.root_watch = []
        self.root_ref = weakref.ref(module)
        self.batch_dim, self.batch_dim_evidence, seq_module = _batch_dim_of(module)
        probe = self
        if seq_module is not None and seq_module is not module:
            self._check_batch_dim(seq_module)

        def on_root_forward(mod, args, kwargs):
            if not probe.disabled and not _compiling(probe.torch):
                probe._guarded(probe._on_root_forward, args, kwargs)
            return None

        try:
            module.register_forward_pre_hook(on_root_forward, with_kwargs=True)
        except TypeError:  # torch < 2.0
            module.register_forward_pre_hook(lambda mod, args: on_root_forward(mod, args, {}))
        # torch runs the hooks it had when this call began: this first call is counted here, from its
        # positional arguments (a model called with keywords only gets its batch from the next call on).
        self._on_root_forward(args, {})

    def _on_root_forward(self, args, kwargs):
        torch = self.torch
        now = time.perf_counter()
        self.last_activity = now
        self.forward_calls += 1
        if self.autocast_dtype is None:
            self.autocast_dtype = _autocast_dtype(torch)
        self._forward_step(now)  # a forward that starts a step ends the one before, before its batch counts
        training = self.step_source != "forward" and torch.is_grad_enabled()
        if training or self.step_source in (None, "forward"):
            # Samples of the training forwards only when steps are training steps (an evaluation pass
            # between them is not the step's work); every forward when forwards are the steps.
            first = _first_tensor(torch, args, kwargs)
            if self.root_input_shape is None and isinstance(first, torch.Tensor):
                self.root_input_shape = tuple(int(d) for d in first.shape)
            # A sequence-first model's input is [seq, batch, ...]: the batch is its second dimension.
            dim = self.batch_dim if isinstance(first, torch.Tensor) and first.dim() > self.batch_dim else 0
            n = _batch_size(torch, first, dim)
            if n is None:
                self.input_samples_known = False
            else:
                self.input_samples += n
            tok = _batch_tokens(torch, kwargs.get("input_ids") if isinstance(kwargs, dict) and "input_ids" in kwargs else first, dim)
            if tok is None:
                self.input_tokens_known = False
            else:
                self.input_tokens += tok[0]
                self.input_seq_len = tok[1]
            self.input_forwards += 1

    def _check_batch_dim(self, seq_module):
        """A one-shot pre-hook on the sequence-first module: a model may transpose its [batch, seq] input before it."""
        probe = self
        handles = []

        def on_call(mod, args):
            if _compiling(probe.torch) or probe.disabled:
                return None
            for h in handles:
                h.remove()  # torch iterates over a copy of the hooks: removing inside one is safe
            del handles[:]
            probe._guarded(probe._confirm_batch_dim, type(mod).__name__, args)
            return None

        handles.append(seq_module.register_forward_pre_hook(on_call))

    def _confirm_batch_dim(self, name, args):
        x = _first_tensor(self.torch, args, {})
        r = self.root_input_shape
        if x is None or r is None or x.dim() < 2 or len(r) < 2 or r[0] == r[1]:
            return  # nothing to compare, or a square input: the flag stands
        if int(x.shape[1]) == r[0]:
            # Its batch (dimension 1) is the model input's dimension 0: the model transposed a batch-first input.
            self.batch_dim = 0
            self.batch_dim_evidence = "%s, fed the input's dimension 0 as its batch (transposed inside the model)" % self.batch_dim_evidence

    def _forward_step(self, now):
        # Forward calls are the steps only for loops with nothing better: no batches, no backward.
        if self.batch_calls or self.backward_calls or not self._takes_over("forward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.forward_calls <= FALLBACK_AFTER:
            return
        if self.step_source in (None, "graph"):
            self._start_clock(now, "forward")  # the step runs from one forward's start to the next's
            return
        self._end_step(now, "forward")

    def _on_optimizer_step(self, optimizer):
        now = time.perf_counter()
        self.last_activity = now
        self.optimizer_stepped = True
        if self.step_source == "marker":
            return  # the script marks its steps itself
        # An optimizer step overrides the batch fallback: the batches before were not training
        # (a pass over the data before the optimizer existed), so their step count ends here.
        if self.primary_optimizer is None:
            self.primary_optimizer = weakref.ref(optimizer)
        elif self.primary_optimizer() is not optimizer:
            return  # several optimizers (e.g. a GAN): the first one's steps mark the steps
        self._end_step(now, "optimizer")

    def _on_marker(self):
        now = time.perf_counter()
        self.last_activity = now
        if self.step_source != "marker":
            # Any other source that started the clock (a backward pass, a forward) did so mid-step.
            restart = self.step_source is not None
            self.step_source = "marker"
            if self.last_boundary is None or restart:
                # The first mark starts the first marked step: no DataLoader started the clock, or the
                # steps so far came from another source (their last one ended elsewhere).
                self._start_clock(now, "marker")
                return
        self._end_step(now, "marker")

    def _start_clock(self, now, source):
        """`source` starts counting: what was seen before belongs to no step."""
        self.step_source = source
        self.last_boundary = now
        self.last_cpu = _thread_cpu()
        self._reset_step_counters()
        self._ensure_watchdog()

    def _reset_step_counters(self):
        """The current step's counts: the DataLoader's waits and batches, and the batches the model's input showed."""
        self.data_wait_s = 0.0
        self.batches = 0
        self.samples = 0
        self.samples_known = True
        self.tokens = 0
        self.tokens_known = True
        self.seq_len = None
        self.input_samples = 0
        self.input_samples_known = True
        self.input_tokens = 0
        self.input_tokens_known = True
        self.input_seq_len = None
        self.input_forwards = 0

    def _end_step(self, now, source):
        self.step_source = source
        if source != "graph":
            self.replays_since_other = 0
        self.step += 1
        step_time = None if self.last_boundary is None else now - self.last_boundary
        cpu = _thread_cpu()
        # Only a delta on one thread is its CPU time (a step ended on another thread has none).
        host_cpu = None if cpu is None or self.last_cpu is None or cpu[0] != self.last_cpu[0] else max(0.0, cpu[1] - self.last_cpu[1])
        if self.fault == "step" and self.step == 2:
            raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=step")
        if not self.announced:
            self._announce()
        if self.watchdog is None:
            self._ensure_watchdog()  # from the first step: a stall is no progress after training began
        if self.model_sent != "step":
            self._send_model("step")  # also after a time window's record: the training's optimizer and model now
        # The batch: the DataLoader's when one fed this step, else the outermost module's input.
        samples = tokens = seq_len = batch_source = None
        if self.batches > 0:
            batch_source = "dataloader"
            samples = self.samples if self.samples_known else None
            tokens = self.tokens if self.tokens_known else None
            seq_len = self.seq_len if self.tokens_known else None
        elif self.input_forwards > 0:
            batch_source = "model-input"
            samples = self.input_samples if self.input_samples_known else None
            tokens = self.input_tokens if self.input_tokens_known else None
            seq_len = self.input_seq_len if self.input_tokens_known else None
        if step_time is not None:
            self.host_step_times.append(step_time)
            self.wait_times.append(self.data_wait_s)
            del self.host_step_times[: -2 * STEADY_WINDOW]
            del self.wait_times[: -2 * STEADY_WINDOW]
        gpu_times = self._gpu_step_times()
        self._send(
            "step",
            {
                "gpuStepTimes": gpu_times,
                "step": self.step,
                "stepTimeS": step_time,
                "hostCpuS": host_cpu,
                "dataWaitS": self.data_wait_s,
                "batches": self.batches,
                "samples": samples,
                "tokens": tokens,
                "seqLen": seq_len,
                "batchSource": batch_source,
                "stepSource": source,
                "memory": self._memory_stats(),
                "profiled": self.prof is not None,
            },
        )
        self.last_boundary = now
        self.last_cpu = cpu
        self._reset_step_counters()
        self._profiler_boundary()
        if self.max_steps is not None and self.step >= self.max_steps:
            self._stop_profiler(export=True)
            self._end("max-steps")
            sys.stderr.write("gpuwise probe: stopping after %d steps (--steps)\n" % self.step)
            sys.stderr.flush()
            raise SystemExit(0)
        if source != "batch":
            # The probe's own work at the boundary is not part of the next step. (A batch step
            # ends where the next fetch started: that fetch's wait belongs to the next step.)
            self.last_boundary = time.perf_counter()
            self.last_cpu = _thread_cpu()

    def _send_model(self, when):
        optimizer = self.primary_optimizer() if self.primary_optimizer is not None else None
        roots = _model_roots(self.torch, optimizer)
        if not roots and self.root_ref is not None and self.root_ref() is not None:
            roots = [_unwrap(self.torch, self.root_ref())]
        summary = _model_summary(self.torch, roots, optimizer)
        summary.update(self._setup_facts(roots))
        if self.root_ref is not None:
            summary["batchDim"] = self.batch_dim
            summary["batchDimEvidence"] = self.batch_dim_evidence
        if when == "time" and not summary["found"]:
            return  # a loop of functions: no model to describe (yet)
        self.model_sent = when
        self._send("model", summary)

    def _on_cuda_init(self):
        torch = self.torch
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None:
            attach(lambda device, alloc, device_alloc, device_free: self._guarded(self._on_oom, device, alloc, device_alloc, device_free))
        if self.memory_history_always:
            self._start_history()
        self._arm_time_window()

    def _on_oom(self, device, alloc_bytes, device_allocated_bytes, device_free_bytes):
        path = None
        if self.oom_snapshot is None and self.run_dir:
            path = os.path.join(self.run_dir, "oom-%s.pickle" % self.tag)
            self.torch.cuda.memory._dump_snapshot(path)
            self.oom_snapshot = path
        self._announce()
        self._send(
            "oom",
            {
                "step": self.step + 1,
                "device": device,
                "allocBytes": alloc_bytes,
                "deviceAllocatedBytes": device_allocated_bytes,
                "deviceFreeBytes": device_free_bytes,
                "snapshot": path,
            },
        )

    def _on_exception(self, etype, value):
        name = getattr(etype, "__name__", str(etype))
        message = str(value)
        # cuBLAS and cuDNN fail their own workspace allocations with ALLOC_FAILED: memory ran out as well.
        oom = name == "OutOfMemoryError" or "out of memory" in message.lower() or "STATUS_ALLOC_FAILED" in message
        self.exception = name
        self._announce()
        self._send("exception", {"step": self.step, "exception": name, "message": message[:2000], "outOfMemory": oom})
        self._stop_profiler(export=True)
        self._end("interrupted" if name == "KeyboardInterrupt" else "exception")

    def _on_exit(self):
        self._stop_profiler(export=True)
        if self.announced:
            self._end("exit")
        self.sink.close()

    # ---------- records ----------

    def _announce(self):
        if self.announced:
            return
        self.announced = True
        torch = self.torch
        cuda = {"available": False, "initialized": False, "version": None, "devices": [], "currentDevice": None}
        if torch is not None:
            cuda["version"] = getattr(torch.version, "cuda", None)
            try:
                cuda["available"] = bool(torch.cuda.is_available())
                cuda["initialized"] = bool(torch.cuda.is_initialized())
            except Exception:
                pass
            if cuda["initialized"]:
                cuda["currentDevice"] = torch.cuda.current_device()
                for i in range(torch.cuda.device_count()):
                    p = torch.cuda.get_device_properties(i)
                    cuda["devices"].append(
                        {"index": i, "name": p.name, "totalMemoryBytes": p.total_memory, "capability": "%d.%d" % (p.major, p.minor)}
                    )
        cudnn = None
        try:
            cudnn = torch.backends.cudnn.version() if torch is not None else None
        except Exception:
            pass
        self._send(
            "hello",
            {
                "probeVersion": __version__,
                "python": platform.python_version(),
                "torch": getattr(torch, "__version__", None),
                "cudnn": cudnn,
                "cuda": cuda,
                "hostname": socket.gethostname(),
                "argv": list(sys.argv),
                "localRank": self.local_rank,
                "worldSize": self.world_size,
                "stepHook": getattr(self, "step_hook", None),
                "profileAt": self.profile_at,
                "profileSteps": self.profile_steps,
                "maxSteps": self.max_steps,
            },
        )

    def _end(self, reason):
        if self.ended:
            return
        self.ended = True
        gpu_times = []
        if reason in ("exit", "max-steps") and self.gpu_events:
            try:
                self.gpu_events[-1][1].synchronize()  # the last steps' work: bounded, at the very end
                gpu_times = self._gpu_step_times(record=False)
            except Exception:
                gpu_times = []
        self._send("end", {"reason": reason, "steps": self.step, "exception": self.exception, "gpuStepTimes": gpu_times})

    def _gpu_step_times(self, record=True):
        """Records this step's end event (when CUDA is in use) and returns [[step, seconds], ...] for
        the steps whose end event the GPU has reached since the last call. Never blocks."""
        torch = self.torch
        if self.gpu_events_failed:
            return []
        try:
            if not torch.cuda.is_initialized():
                return []
            capturing = getattr(torch.cuda, "is_current_stream_capturing", None)
            if record and capturing is not None and capturing():
                return []  # inside a CUDA graph capture an event would become part of the graph
            if record:
                ev = torch.cuda.Event(enable_timing=True)
                ev.record()
                self.gpu_events.append((self.step, ev))
            done = []
            while len(self.gpu_events) >= 2 and self.gpu_events[1][1].query():
                (_, a), (step, b) = self.gpu_events[0], self.gpu_events[1]
                done.append([step, a.elapsed_time(b) / 1000.0])
                self.gpu_events.pop(0)
            if len(self.gpu_events) > 4096:  # the GPU is stuck: keep memory bounded
                del self.gpu_events[:-2]
            return done
        except Exception:
            # e.g. a stream capture (CUDA graphs) in progress: host timing only, not an error.
            self.gpu_events_failed = True
            self.gpu_events = []
            return []

    def _memory_stats(self):
        torch = self.torch
        try:
            if not torch.cuda.is_initialized():
                return None
        except Exception:
            return None
        device = torch.cuda.current_device()
        raw = getattr(torch._C, "_cuda_memoryStats", None)
        if raw is not None:
            # The C call's nested dict: torch.cuda.memory_stats() flattens it in Python, which
            # cost most of the probe's per-step time on an H200 (0.6 ms on a 15 ms step).
            try:
                n = raw(device)
                return {
                    "device": device,
                    "allocatedBytes": n["allocated_bytes"]["all"]["current"],
                    "reservedBytes": n["reserved_bytes"]["all"]["current"],
                    "peakAllocatedBytes": n["allocated_bytes"]["all"]["peak"],
                    "peakReservedBytes": n["reserved_bytes"]["all"]["peak"],
                    "allocRetries": n.get("num_alloc_retries"),
                    "ooms": n.get("num_ooms"),
                }
            except Exception:
                pass
        s = torch.cuda.memory_stats()
        return {
            "device": device,
            "allocatedBytes": s.get("allocated_bytes.all.current"),
            "reservedBytes": s.get("reserved_bytes.all.current"),
            "peakAllocatedBytes": s.get("allocated_bytes.all.peak"),
            "peakReservedBytes": s.get("reserved_bytes.all.peak"),
            "allocRetries": s.get("num_alloc_retries"),
            "ooms": s.get("num_ooms"),
        }

    # ---------- profiler window and memory snapshot ----------

    def _profiler_boundary(self):
        """Called after step `self.step` ended. The window covers steps profile_at .. profile_at+K-1."""
        if self.profile_steps <= 0 or not self.run_dir or self.time_state == "open":
            return  # a time window that is open ends at its time (the steps started during it)
        nxt = self.step + 1
        if self.prof is None and self.prof_first_step is None:
            aligned = self.world_size is not None and self.world_size > 1 and not self.profile_fixed
            reason = self._aligned_reason(nxt) if aligned else self._window_reason(nxt)
            if reason is not None:
                self._start_profiler(nxt, reason)
        elif self.prof is not None:
            self.prof_step_fn.__exit__(None, None, None)
            self.prof_step_fn = None
            if nxt >= self.prof_first_step + self.profile_steps:
                self._stop_profiler(export=True)
            else:
                self._enter_step(nxt)

    def _window_reason(self, nxt):
        """Why the window opens at step `nxt`, or None to wait: "fixed" (GPUWISE_PROFILE_AT given), "settled"
        (step times steady and the DataLoader wait no longer falling), "cap" (never settled: open anyway,
        also when a --steps limit leaves just room for the window)."""
        if nxt < self.profile_at:
            return None
        if self.profile_fixed:
            return "fixed" if nxt == self.profile_at else None
        last_room = self.max_steps is not None and nxt + self.profile_steps > self.max_steps
        if last_room or nxt >= self.profile_at * STEADY_CAP_FACTOR:
            return "cap"
        t, w = self.host_step_times, self.wait_times
        if len(t) < 2 * STEADY_WINDOW:
            return None
        before, recent = _median(t[:STEADY_WINDOW]), _median(t[STEADY_WINDOW:])
        if before <= 0 or abs(recent - before) > STEADY_TOLERANCE * before:
            return None
        wait_before, wait_recent = sum(w[:STEADY_WINDOW]), sum(w[STEADY_WINDOW:])
        # Falling by more than the tolerance and by more than 1% of the steps: workers still filling queues.
        if wait_before - wait_recent > max(STEADY_TOLERANCE * wait_before, 0.01 * sum(t[STEADY_WINDOW:])):
            return None
        return "settled"

    def _aligned_reason(self, nxt):
        """The window of a distributed run: every rank profiles the same steps, or the rank that is profiled (its
        CPU slowed by the profiler) makes the others wait in their collectives, and the windows show that wait as
        exposed communication and rank imbalance. Rank 0 decides as a single process would and writes the first
        step, WINDOW_LEAD steps ahead, into the run directory (shared by the ranks of one node); the others poll
        for it at each step (one stat) and fall back to their own choice when it never comes (rank 0 without the
        probe, another node)."""
        if self.window_plan is None:
            if self.rank == 0:
                reason = self._window_reason(nxt)
                if reason is None:
                    return None
                # A --steps limit that leaves just room for the window: every rank computes the same step.
                last_room = self.max_steps is not None and nxt + WINDOW_LEAD + self.profile_steps > self.max_steps
                self.window_plan = (nxt if last_room else nxt + WINDOW_LEAD, reason)
                _write_json_atomic(os.path.join(self.run_dir, WINDOW_PLAN_FILE), {"step": self.window_plan[0], "reason": reason})
            else:
                plan = _read_window_plan(os.path.join(self.run_dir, WINDOW_PLAN_FILE))
                if plan is not None:
                    self.window_plan = plan
                else:
                    own = self._window_reason(nxt)
                    if own is None:
                        return None
                    # Ranks in lockstep settle within a step or two of each other: a plan that has not come
                    # STEADY_WINDOW + 2 leads after this rank was ready will not come.
                    if self.own_ready_at is None:
                        self.own_ready_at = nxt
                    last_room = self.max_steps is not None and nxt + self.profile_steps > self.max_steps
                    late = nxt >= self.own_ready_at + STEADY_WINDOW + 2 * WINDOW_LEAD
                    return own if last_room or late else None
        first, reason = self.window_plan
        return reason if nxt >= first else None

    def _setup_facts(self, roots):
        """What the model record adds to the summary: compiled or not (and how it is known), the training
        framework whose loop runs (from the call stack), and the autocast dtype seen at the model's forward."""
        torch = self.torch
        compiled, evidence = None, None
        root = self.root_ref() if self.root_ref is not None else None
        for m in [root] + list(roots):
            if m is None:
                continue
            if type(m).__name__ == "OptimizedModule" or getattr(m, "_orig_mod", None) is not None:
                compiled, evidence = True, "OptimizedModule (torch.compile(model))"
                break
            if getattr(m, "_compiled_call_impl", None) is not None:
                compiled, evidence = True, "module.compile()"
                break
        if compiled is None:
            dynamo = sys.modules.get("torch._dynamo.utils")
            try:
                frames = dynamo.counters["stats"]["unique_graphs"] if dynamo is not None else 0
            except Exception:
                frames = 0
            compiled, evidence = (True, "torch._dynamo compiled %d graphs" % frames) if frames else (False, None)
        framework, version = _framework()
        return {
            "compiled": compiled,
            "compiledEvidence": evidence,
            "framework": framework,
            "frameworkVersion": version,
            "autocastDtype": self.autocast_dtype,
            "acceleratePrecision": _accelerate_precision(),
        }

    def _start_profiler(self, first_step, reason="fixed"):
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        cuda_on = torch.cuda.is_initialized()
        if cuda_on:
            activities.append(ProfilerActivity.CUDA)
            if not self.history_on:
                self._start_history()
        self.prof = profile(activities=activities, record_shapes=True)
        self.prof.start()
        self.prof_first_step = first_step
        self._send(
            "profile-start",
            {"step": first_step, "steps": self.profile_steps, "cuda": cuda_on, "reason": reason, "settled": reason in ("settled", "fixed"), "warmupSteps": first_step - 1, "aligned": self.window_plan is not None},
        )
        self._enter_step(first_step)

    def _enter_step(self, step):
        # The same `ProfilerStep#N` spans torch.profiler's schedule writes, which analyze reads as steps.
        self.prof_step_fn = self.torch.autograd.profiler.record_function("ProfilerStep#%d" % step)
        self.prof_step_fn.__enter__()

    def _stop_profiler(self, export):
        prof = self.prof
        if prof is None:
            return
        self.prof = None
        if self.prof_step_fn is not None:
            try:
                self.prof_step_fn.__exit__(None, None, None)
            except Exception:
                pass
            self.prof_step_fn = None
        timed = self.time_state == "open"
        profiled_s = time.perf_counter() - self.time_opened_at if timed else None  # before stop(), which processes the events
        prof.stop()
        # A time window has no steps, and files of its own: a step window may still come after it.
        suffix = "-time" if timed else ""
        if timed:
            self.time_state = "done"
            fields = {"firstStep": None, "lastStep": None, "reason": "time", "durationS": profiled_s}
        else:
            fields = {"firstStep": self.prof_first_step, "lastStep": self.step}
        fields.update({"trace": None, "snapshot": None})
        if export and self.run_dir:
            path = os.path.join(self.run_dir, "trace-%s%s.json" % (self.tag, suffix))
            prof.export_chrome_trace(path)
            fields["trace"] = path
        if self.history_on and self.run_dir:
            path = os.path.join(self.run_dir, "snapshot-%s%s.pickle" % (self.tag, suffix))
            self.torch.cuda.memory._dump_snapshot(path)
            fields["snapshot"] = path
            if not self.memory_history_always:
                self._stop_history()
        self._send("profile-end", fields)

    # ---------- graph replays and the time window ----------

    def _wrap_graph_replay(self, torch):
        """Counts `torch.cuda.CUDAGraph.replay` calls (a Python method over the C graph in every torch with graphs)."""
        cls = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
        original = getattr(cls, "replay", None)
        if cls is None or original is None or getattr(original, "_gpuwise_wrapped", False):
            return
        probe = self

        def replay(graph, *args, **kwargs):
            out = original(graph, *args, **kwargs)
            if not probe.disabled:
                probe._guarded(probe._on_graph_replay, graph)
            return out

        functools.update_wrapper(replay, original)
        replay._gpuwise_wrapped = True
        cls.replay = replay

    def _on_graph_replay(self, graph):
        now = time.perf_counter()
        self.last_activity = now
        self.graph_replays += 1
        if self.primary_graph is None:
            self.primary_graph = weakref.ref(graph)
        elif self.primary_graph() is not graph:
            return  # several graphs a step (forward and backward graphs): the first one's replays mark the steps
        if self.step_source == "graph":
            self._end_step(now, "graph")
            return
        self.replays_since_other += 1
        if self.step_source is None:
            if self.optimizer_built and not self.optimizer_stepped and self.graph_replays <= FALLBACK_AFTER:
                return
            self._start_clock(now, "graph")
        elif self.replays_since_other >= GRAPH_TAKEOVER:
            # The higher source fell silent while the graph kept replaying: the whole step was captured in it.
            self._start_clock(now, "graph")

    def _install_time_window(self):
        """Our handler for a real-time signal nobody handles, on the main thread (where signal.signal must run)."""
        if self.time_after_s <= 0 or self.time_window_s <= 0 or self.profile_steps <= 0 or not self.run_dir:
            return
        import signal

        sig = getattr(signal, _TIME_WINDOW_SIGNAL, None)
        if sig is None or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(sig) != signal.SIG_DFL:
            return  # the script's, or a C library's (None): leave it
        probe = self

        def on_signal(signum, frame):
            probe._on_time_signal(frame)

        signal.signal(sig, on_signal)
        try:
            signal.siginterrupt(sig, False)  # if it is ever sent for real, system calls restart
        except (AttributeError, OSError, ValueError):
            pass
        self.time_signal = sig
        self.time_handler = on_signal
        self.time_requested = False

    def _arm_time_window(self):
        """Starts the watcher thread once the process has device work (CUDA initialised)."""
        if self.time_signal is None or self.time_armed_at is not None:
            return
        self.time_armed_at = time.perf_counter()
        threading.Thread(target=self._time_watch, name="gpuwise-time-window", daemon=True).start()

    def _time_watch(self):
        # Reads the probe's state without the lock (single attribute reads under the GIL); acts only through the
        # main thread. Never raises: a failure here leaves the run without a time window, nothing else.
        try:
            import signal

            poll_s = max(0.05, min(0.5, self.time_after_s / 4, self.time_window_s / 4))
            while not self.disabled and not self.ended and self.time_state != "done":
                time.sleep(poll_s)
                if self.time_state is None:
                    if self.step > 0:
                        return  # steps were found: the step window does the work
                    quiet_since = max(self.time_armed_at, self.last_activity or 0.0)
                    if self.prof is not None or time.perf_counter() - quiet_since < self.time_after_s:
                        continue
                elif time.perf_counter() - self.time_opened_at < self.time_window_s:
                    continue
                if signal.getsignal(self.time_signal) is not self.time_handler:
                    return  # the script took the signal over since
                self.time_requested = True
                _interrupt_main(self.time_signal)
        except Exception:
            return

    def _on_time_signal(self, frame):
        """On the main thread, between two bytecodes of whatever it runs (see _time_watch)."""
        if self.disabled or not self.time_requested:
            return
        # Never in the middle of the probe's own code (a record half built): the watcher asks again.
        f = frame
        while f is not None:
            if f.f_globals.get("__name__") == __name__:
                return
            f = f.f_back
        self.time_requested = False
        self._guarded(self._time_window_tick)

    def _time_window_tick(self):
        if self.time_state is None:
            if self.step > 0 or self.prof is not None:
                return
            self._start_time_window()
        elif self.time_state == "open":
            self._stop_profiler(export=True)

    def _start_time_window(self):
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile

        quiet_s = time.perf_counter() - max(self.time_armed_at, self.last_activity or 0.0)
        activities = [ProfilerActivity.CPU]
        cuda_on = torch.cuda.is_initialized()
        if cuda_on:
            activities.append(ProfilerActivity.CUDA)
        prof = profile(activities=activities, record_shapes=True)
        try:
            prof.start()
        except RuntimeError:
            self.time_state = "done"  # the script profiles itself: its profiler stays, no window of ours
            return
        self.prof = prof
        if cuda_on and not self.history_on:
            self._start_history()
        self._announce()
        if self.model_sent is None:
            self._send_model("time")
        self.time_opened_at = time.perf_counter()
        self.time_state = "open"  # after time_opened_at: the watcher reads it then
        # No ProfilerStep span: analyze takes a trace without step markers as one step.
        self._send(
            "profile-start",
            {"step": None, "steps": 0, "cuda": cuda_on, "reason": "time", "durationS": self.time_window_s, "quietS": quiet_s, "aligned": False},
        )

    def _start_history(self):
        rec = self.torch.cuda.memory._record_memory_history
        try:
            rec(max_entries=100000)
        except TypeError:  # torch < 2.1
            rec(True)
        self.history_on = True

    def _stop_history(self):
        rec = self.torch.cuda.memory._record_memory_history
        try:
            rec(enabled=None)
        except TypeError:
            rec(False)
        self.history_on = False


def _model_roots(torch, optimizer):
    """The model(s) the optimizer trains, found once at the first step: the outermost live
    nn.Modules (no other module's child) holding parameters of the optimizer, unwrapped from
    DDP/DataParallel/FSDP. Read from the garbage collector's objects rather than forward hooks,
    which would slow every module call and interfere with torch.compile's guards."""
    import gc

    params = set()
    for g in optimizer.param_groups if optimizer is not None else ():
        for p in g.get("params", []):
            params.add(id(p))
    Module = torch.nn.Module
    # type() rather than isinstance(): isinstance reads `__class__`, which some objects intercept
    # (torch.distributed's deprecated reduce_op warns on any attribute access).
    modules = [o for o in gc.get_objects() if issubclass(type(o), Module)]
    children = set()
    for m in modules:
        for c in m.children():
            children.add(id(c))
    roots = []
    for m in modules:
        if id(m) in children:
            continue
        m = _unwrap(torch, m)
        if any(m is x for x in roots):
            continue
        # Without an optimizer (gpuwise.step() or batch steps): every outermost module with parameters.
        if any(optimizer is None or id(p) in params for p in m.parameters()):
            roots.append(m)
    # Largest first: the model before, say, a small auxiliary head trained by the same optimizer.
    roots.sort(key=lambda m: -sum(p.numel() for p in m.parameters()))
    return roots


def _unwrap(torch, module):
    # DistributedDataParallel, DataParallel and FSDP1 keep the user's model in `.module`, torch.compile's
    # OptimizedModule in `._orig_mod` (possibly both, in either order).
    for _ in range(4):
        name = type(module).__name__
        if name in ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"):
            inner = getattr(module, "module", None)
        elif name == "OptimizedModule":
            inner = getattr(module, "_orig_mod", None)
        else:
            return module
        if not isinstance(inner, torch.nn.Module):
            return module
        module = inner
    return module


def _compiling(torch):
    """Whether dynamo is tracing this very call (our hooks must then stay out of the graph)."""
    f = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    try:
        return bool(f()) if f is not None else False
    except Exception:
        return False


def _autocast_dtype(torch):
    """The CUDA autocast dtype in force ("bfloat16", "float16"), "" when autocast is off, None if unknown."""
    try:
        try:
            on = torch.is_autocast_enabled("cuda")
            dtype = torch.get_autocast_dtype("cuda")
        except TypeError:  # torch < 2.4
            on = torch.is_autocast_enabled()
            dtype = torch.get_autocast_gpu_dtype()
        return _dtype_name(dtype) if on else ""
    except Exception:
        return None


def _first_tensor(torch, args, kwargs):
    """The first tensor argument of a forward call (positional first, then keyword), looking one level
    into lists, tuples and dicts (a batch passed as one structure)."""
    for x in list(args) + list((kwargs or {}).values()):
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor):
            return x[0]
        if isinstance(x, dict):
            for v in x.values():
                if isinstance(v, torch.Tensor):
                    return v
    return None


# Training frameworks whose own loop drives the steps, by the module of a frame on the stack at a step.
_FRAMEWORKS = (("transformers.trainer", "transformers"), ("lightning.", "lightning"), ("pytorch_lightning.", "lightning"), ("accelerate.", "accelerate"))


def _accelerate_precision():
    """The mixed precision accelerate was set up with ("no", "bf16", "fp16", "fp8"), or None when accelerate is not
    in use. accelerate enters autocast inside the prepared model's forward (it wraps model.forward), after the forward
    pre-hook that reads the autocast state, so its own state says what the run asked for: accelerate launch's
    --mixed_precision or config file (ACCELERATE_MIXED_PRECISION), Accelerator(mixed_precision=...), or a Hugging Face
    Trainer's bf16/fp16 (the Trainer builds an Accelerator)."""
    st = sys.modules.get("accelerate.state")
    if st is None:
        return None
    try:
        shared = getattr(getattr(st, "AcceleratorState", None), "_shared_state", None) or {}
        mp = shared.get("_mixed_precision")
    except Exception:
        mp = None
    if mp is None:
        mp = os.environ.get("ACCELERATE_MIXED_PRECISION")  # launched by accelerate, its Accelerator not built yet
    if mp is None:
        return None
    return str(getattr(mp, "value", mp))  # a PrecisionType enum in some versions


def _framework():
    """(name, version) of the training framework on the call stack, e.g. ("transformers", "4.57.0")."""
    found = None
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "") or ""
        for prefix, name in _FRAMEWORKS:
            if mod.startswith(prefix):
                found = name  # keep walking: the outermost framework wins (Trainer above accelerate)
        f = f.f_back
    if found is None:
        return None, None
    top = {"transformers": "transformers", "lightning": "lightning" if "lightning" in sys.modules else "pytorch_lightning", "accelerate": "accelerate"}[found]
    return found, getattr(sys.modules.get(top), "__version__", None)


def _interrupt_main(sig):
    """Runs the Python handler of `sig` on the main thread at its next bytecode, without sending a signal (3.10+);
    older Pythons get the signal itself, restarting system calls (siginterrupt False)."""
    import _thread

    try:
        _thread.interrupt_main(sig)
    except TypeError:
        import signal

        signal.pthread_kill(threading.main_thread().ident, sig)


def _batch_dim_of(root):
    """(dimension of the batch in the root's input, what showed it, the sequence-first module): 1 when the first module of the model that reads
    a `batch_first` flag (the root itself, an RNN, LSTM, GRU, a Transformer layer, MultiheadAttention) has it False,
    as torch's default: its input is [seq, batch, ...]. One walk over the modules, when the root is found."""
    try:
        for _, m in root.named_modules():
            flag = getattr(m, "batch_first", None)
            if not isinstance(flag, bool):
                continue
            if m is not root and not any(c.__name__ in _SEQ_FIRST_CLASSES for c in type(m).__mro__):
                continue
            return (0 if flag else 1), "%s(batch_first=%s)" % (type(m).__name__, flag), (None if flag else m)
    except Exception:
        pass
    return 0, None, None


def _write_json_atomic(path, obj):
    import json

    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def _read_window_plan(path):
    """(first step, reason) from rank 0's plan, or None while there is none (or it cannot be read yet)."""
    if not os.path.exists(path):
        return None
    import json

    try:
        with open(path) as f:
            d = json.load(f)
        return (int(d["step"]), str(d["reason"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _format_stack(frame):
    """A thread's Python stack as `file:line function`, innermost last, its innermost STALL_STACK_FRAMES frames."""
    out = []
    f = frame
    while f is not None and len(out) < STALL_STACK_FRAMES:
        out.append("%s:%d %s" % (f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    out.reverse()
    return out


def _median(xs):
    ys = sorted(xs)
    n = len(ys)
    return 0.0 if n == 0 else (ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2]))


def _batch_size(torch, batch, dim=0):
    """Dimension `dim` (the leading one by default) of the first tensor in the batch, or None when it cannot be told."""
    for _ in range(4):
        if isinstance(batch, torch.Tensor):
            return int(batch.shape[dim]) if batch.dim() > dim else None
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return None
    return None


def _batch_tokens(torch, batch, batch_dim=0):
    """(token positions, sequence length) when the batch holds token ids: a dict's `input_ids`, or the
    first 2-D integer tensor found (samples x sequence, or sequence x samples when `batch_dim` is 1);
    None otherwise. Shapes only: no GPU sync."""
    t = None
    if isinstance(batch, dict):
        t = batch.get("input_ids")
    if t is None:
        todo = [batch]
        for _ in range(16):
            if not todo:
                break
            x = todo.pop(0)
            if isinstance(x, torch.Tensor):
                if x.dim() == 2 and not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool:
                    t = x
                    break
            elif isinstance(x, (list, tuple)):
                todo.extend(x[:4])
            elif isinstance(x, dict):
                todo.extend(list(x.values())[:4])
    if isinstance(t, torch.Tensor) and t.dim() == 2:
        return int(t.numel()), int(t.shape[1 - batch_dim])
    return None


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _model_summary(torch, roots, optimizer):
    """The `model` record: a gpuwise-model/1 object (paramCount, paramGroups, names) plus the
    per-module dtypes, buffers and optimizer state. The architecture numbers `plan` needs come
    from the Hugging Face config (`hfConfig`) when the model carries one; gpuwise reads it."""
    seen = set()
    modules = []
    total = 0
    trainable = 0
    buffers = {"count": 0, "bytes": 0, "dtypes": {}}
    name = None
    hf_config = None
    for root in roots:
        name = name or type(root).__name__
        groups = [("(root)", type(root).__name__, root.named_parameters(recurse=False))]
        groups += [(n, type(c).__name__, c.named_parameters()) for n, c in root.named_children()]
        for gname, cls, named in groups:
            entry = {"name": gname, "class": cls, "paramCount": 0, "trainableParamCount": 0, "dtypes": {}}
            for _, p in named:
                if id(p) in seen:
                    continue  # tied weights count once
                seen.add(id(p))
                n = p.numel()
                entry["paramCount"] += n
                entry["trainableParamCount"] += n if p.requires_grad else 0
                d = _dtype_name(p.dtype)
                entry["dtypes"][d] = entry["dtypes"].get(d, 0) + n
            if entry["paramCount"] > 0:
                modules.append(entry)
                total += entry["paramCount"]
                trainable += entry["trainableParamCount"]
        for b in root.buffers():
            buffers["count"] += 1
            buffers["bytes"] += b.numel() * b.element_size()
            d = _dtype_name(b.dtype)
            buffers["dtypes"][d] = buffers["dtypes"].get(d, 0) + b.numel() * b.element_size()
        cfg = getattr(root, "config", None)
        if hf_config is None and cfg is not None and callable(getattr(cfg, "to_dict", None)):
            try:
                import json

                hf_config = json.loads(json.dumps(cfg.to_dict(), default=str))
            except Exception:
                hf_config = None
    state = {"bytes": 0, "dtypes": {}}
    for st in optimizer.state.values() if optimizer is not None else ():
        for v in st.values() if isinstance(st, dict) else ():
            if isinstance(v, torch.Tensor):
                nbytes = v.numel() * v.element_size()
                state["bytes"] += nbytes
                d = _dtype_name(v.dtype)
                state["dtypes"][d] = state["dtypes"].get(d, 0) + nbytes
    return {
        "format": "gpuwise-model/1",
        "name": name or "unknown",
        "modelType": name or "unknown",
        "architecture": name or "unknown",
        "paramCount": trainable,
        "totalParamCount": total,
        "paramGroups": [{"name": m["name"], "count": m["trainableParamCount"]} for m in modules],
        "modules": modules,
        "buffers": buffers,
        "optimizer": None
        if optimizer is None
        else {
            "class": type(optimizer).__name__,
            "paramGroups": len(optimizer.param_groups),
            "stateBytes": state["bytes"],
            "stateDtypes": state["dtypes"],
        },
        "hfConfig": hf_config,
        "found": len(roots) > 0,
    }
