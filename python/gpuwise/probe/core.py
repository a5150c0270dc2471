"""The probe object: its state, its life (install when torch is imported, uninstall at the end), and the fail-open
plumbing every hook runs through."""
import atexit
import inspect
import os
import platform
import sys
import threading
import time
import weakref

from .. import PROTOCOL_VERSION, __version__
from ..transport import Sink
from . import config, hooks, patches, safe
from .background import IDLE_TICK_S, TICK_S, Background
from .batch import BatchReader, batch_dim_of
from .beacon import StepBeacon
from .calls import CallWatch
from .gpu import Gpu
from .loader import READ_EVERY_S, LoaderWatch
from .threads import ThreadCpuWatch
from .mainthread import MainThreadCall
from .model import RootWatch, _autocast_dtype, model_record
from .records import Sender, record
from .steps import StepsMixin
from .watchdog import Watchdog
from .window import WindowMixin

_get_ident = threading.get_ident


def _plain_arg(a):
    """An exception argument whose text is C's to make (no `__str__` or `__repr__` of the script's)."""
    t = type(a)
    if a is None or t in (str, int, float, bool):
        return True
    return t is tuple and all(x is None or type(x) in (str, int, float, bool) for x in a)
# A fork waits at most this long for the background work's job (an export) to finish.
FORK_WAIT_S = 30.0


def _legacy_profiler(torch):
    """torch's legacy CPU profiler class, where every piece window.py uses exists (else None: Kineto only)."""
    try:
        import torch.autograd.profiler_legacy as legacy
    except ImportError:
        return None
    needed = (getattr(torch.autograd, "_enable_profiler_legacy", None), getattr(torch.autograd, "_disable_profiler_legacy", None), getattr(legacy, "_parse_legacy_records", None))
    if any(x is None for x in needed) or not hasattr(legacy.profile, "_start_trace"):
        return None
    return legacy.profile


class Probe(StepsMixin, WindowMixin):
    def __init__(self, env, environment=None):
        self.cfg = cfg = config.Settings(env)
        # Started by doctor (not a notebook): what of doctor's leaves the C environment once the process trains.
        self.environment = environment
        self.sink = Sink(cfg.socket_path, cfg.run_dir)
        self.background = Background(self)
        self.sender = Sender(self.sink, self.background.wake)
        self.beacon = StepBeacon(cfg.run_dir)
        self.tag = "rank%d" % cfg.rank if cfg.rank is not None else "pid%d" % os.getpid()
        self.pid = os.getpid()
        self.protocol = PROTOCOL_VERSION
        self.patches = patches.Patches()
        self.main_call = MainThreadCall()
        self.main_ident = threading.main_thread().ident
        self.watchdog = Watchdog(cfg.stall_floor_s, cfg.stall_repeat_s)
        self.tick_progress = None  # the loop's counters at the last background run (tick_s)
        self.torch = None
        self.gpu = None
        self.legacy_profiler = None  # window.py: the CPU-only window's profiler class (set at install)
        self.profiler_params = frozenset()
        self.root_watch = None
        self.batch_reader = None
        self.role = None  # None until the first hook decides: "main" (this process trains), or "off"
        self.disabled = False
        self.ended = False
        self.announced = False
        self.withdrawn = False  # doctor's variables left the C environment (children run without the probe)
        self.model_sent = None  # None, "time" (with the time window), "step" (at the first step)
        self.step_hook = None
        self.import_hook = None  # the post-import hook waiting for `import torch` (patches.py)
        self.exception = None
        self.oom_snapshot = None
        # Steps (steps.py)
        self.step = 0
        self.step_source = None  # None until the first step, then a key of SOURCE_RANK
        self.step_thread = None
        self.primary_optimizer = None  # weakref to the optimizer whose steps count
        self.optimizer_built = False
        self.optimizer_stepped = False
        self.last_boundary = None  # perf_counter() at the end of the previous step
        # The stepping thread's CPU time at that boundary (thread_time()) and its thread: the host's own work per step
        # (a DataLoader queue wait or a GIL wait sleeps and does not count; a spin-waiting CUDA sync does).
        self.last_cpu = None
        self.cpu_thread = None
        self.batch_calls = 0
        self.backward_calls = 0
        self.forward_calls = 0
        # The outermost module's forwards seen, by grad mode: with gradients, under no_grad, under inference_mode.
        self.forward_grad_modes = [0, 0, 0]
        self.graph_replays = 0
        self.primary_graph = None
        self.replays_since_other = 0
        self.graph_loop = False  # the graph's replays took the steps over once: the loop's steps are replays
        self.last_activity = None  # perf_counter() of the last step-like event (batch, forward, backward, replay ...)
        # Between two bursts of the sampled steady loop (steps.py): the step whose end starts the next burst, the steps
        # until then only counted; None while every step is recorded.
        self.burst_at = None
        self.batches_paused = False  # between bursts, the DataLoader's batches read off its iterator (steps.py)
        self.next_code = None  # the code of the DataLoader iterators' __next__, where sys.monitoring watches it
        self.backward_code = None  # torch.autograd.backward's, where sys.monitoring watches it (paused like next_code)
        self.backward_spans = []  # (start, end) of backward passes seen from their start, appended at their end
        self.backward_until_window = False  # its watch is taken back once the window is done (_optimizer_steps)
        self.feed = None  # (weakref to the iterator, its loader's state) the steps' DataLoader batches come from
        self.feed_id = None  # id() of that iterator
        self.step_mixed = self.last_step_mixed = False  # batches of two iterators in this step / the one before
        self.feed_mark = 0  # the iterator's count of batches when the batches were paused
        self.host_step_times = []  # the last steps' host times (s), for the steady-state test and the watchdog
        self.wait_times = []
        self.next_step_work = None  # the probe's own work the next step record carries (`probeWork`)
        self.jobs_seen = 0
        self.batches_without_tokens = 0
        self.cuda_on = False  # CUDA initialised in this process (timing events, allocator figures)
        self._reset_step_counters()
        # The model's input (model.py)
        self.autocast_dtype = None
        self.batch_dim = None  # (dimension, evidence) once the root is known
        self.root_input_shape = None
        self.seq_module = None
        # The profiler window (window.py)
        self.prof = None
        self.own_profiler = None
        self.profiler_opening = False
        self.prof_cuda = False
        self.prof_step_fn = None
        self.prof_first_step = None
        self.window_kind = None
        self.window_thread = None
        self.window_opened_at = None
        self.window_done = False
        self.window_plan = None  # (first step, reason) of a distributed run's common window
        self.own_ready_at = None  # the step at which this rank would have opened its window alone
        self.user_profilers = {}  # id -> weak reference: the script's profilers prepared (window.py)
        self.time_armed_at = None  # perf_counter() when the time window became possible (CUDA initialised)
        self.time_state = None  # None, "open" (profiling), "done"
        self.calls = CallWatch()  # the calls seen through sys.monitoring (patches.py)
        self.loader_watch = LoaderWatch()  # the DataLoaders iterated and their workers' CPU (loader.py)
        self.thread_cpu = ThreadCpuWatch()  # the process's CPU time by thread (threads.py)
        try:
            # A forked child (a DataLoader worker, a multiprocessing process) decides at its first hook; the fork
            # waits for a trace or snapshot being written (torch holds its locks meanwhile: a child would inherit them).
            os.register_at_fork(before=self._before_fork, after_in_child=self._after_fork)
        except Exception:
            pass

    # ---------- fail-open plumbing ----------

    def _guarded(self, fn, *args):
        if self.disabled:
            return None
        if self.role is None and not self._decide_role():
            return None
        try:
            return fn(*args)
        except SystemExit:
            raise  # only the probe's own --steps stop raises it
        except Exception as e:
            self._fail(e)
            return None

    def _decide_role(self):
        """At this process's first hook: a DataLoader worker runs no probe (its steps are not the training's)."""
        info = None
        try:
            info = self.torch.utils.data.get_worker_info() if self.torch is not None else None
        except Exception:
            pass
        if info is not None:
            self.role = "off"
            self.switch_off()
            return False
        self.role = "main"
        return True

    def _fail(self, e):
        if self.disabled:
            return
        self.disabled = True
        try:
            sys.stderr.write("gpuwise probe: internal error, probe switched off, training continues: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass
        try:
            self._queue("probe-error", {"error": "%s: %s" % (type(e).__name__, e), "step": self.step}, now=True)
        except Exception:
            pass
        try:
            self._stop_profiler("error")  # only on the window's own thread; elsewhere it stops at the exit
        except Exception:
            pass
        # Hooks are taken back only from the thread that runs them (a global hook removed from another thread could
        # change a dict torch is iterating); otherwise they pass through until the exit takes them back.
        if threading.get_ident() == (self.step_thread or self.main_ident):
            self.uninstall()

    def switch_off(self):
        """Quietly: nothing of the probe's stays in this process (a DataLoader worker, a notebook between cells)."""
        self.disabled = True
        self.uninstall()
        try:
            atexit.unregister(self._on_exit)
            hooks = getattr(threading, "_threading_atexits", None)
            if isinstance(hooks, list) and self._at_threads_exit in hooks:
                hooks.remove(self._at_threads_exit)
            if self.import_hook is not None:
                sys.meta_path.remove(self.import_hook)
        except ValueError:
            pass

    def _queue(self, kind, fields, now=False):
        self.sender.put(record(kind, self.cfg.rank, fields), now=now)

    # ---------- installation ----------

    def on_torch_imported(self, torch):
        self._guarded_install(torch)

    def _guarded_install(self, torch):
        if self.disabled:
            return
        try:
            self._install(torch)
        except Exception as e:
            self._fail(e)

    def _install(self, torch):
        self.torch = torch
        if self.environment is not None:
            self.environment.imported_torch()
        self.inference_mode_on = getattr(torch, "is_inference_mode_enabled", None)  # torch >= 1.9; read per forward
        # Every import the probe needs, made now (on the thread importing torch) and never later from a hook, where
        # an import could meet a thread of the script importing torch's lazy modules.
        import torch.optim  # noqa: F401
        import torch.optim.optimizer  # noqa: F401
        import torch.autograd.profiler  # noqa: F401
        import torch.utils.data
        import torch.utils.data.dataloader as dl
        import torch.autograd.profiler_util  # noqa: F401
        import torch.jit._builtins  # noqa: F401

        self.profiler_class = torch.autograd.profiler.profile
        self.legacy_profiler = _legacy_profiler(torch)
        try:
            self.profiler_params = frozenset(inspect.signature(self.profiler_class.__init__).parameters)
        except (TypeError, ValueError):
            self.profiler_params = frozenset(("use_cuda", "use_kineto", "record_shapes"))
        self.gpu = Gpu(torch, self.cfg.gpu_timing, self.cfg.memory_stacks)
        self.cuda_on = self.gpu.on()  # (a notebook's later cell: CUDA may be up already)
        self.batch_reader = BatchReader(torch)
        probe = self
        self.root_watch = RootWatch(
            torch,
            lambda module: probe._guarded(probe._on_root_discovered, module),
            lambda args, kwargs, ident: probe._guarded(probe._on_root_forward, args, kwargs, ident),
            self.calls,
        )
        p = self.patches
        patches.install_optimizer(self, p, torch)
        patches.install_dataloader(self, p, dl)
        patches.install_backward(self, p, torch)
        patches.install_compile(self, p, torch)
        patches.install_profiler_guard(self, p, torch)
        if self.cfg.trial is not None:  # `tune --plan` only: the fixes a trial makes (trial.py)
            from . import trial

            trial.install(self, torch)
        self.root_watch.discover()
        p.add_undo("root-watch", self.root_watch.remove_all)
        if self.cfg.time_cpu:
            self._arm_time_window()  # test knob: any torch process counts as device work
        # CUDA: the OOM observer (and history) and the graph replays as soon as CUDA initialises.
        lazy_call = getattr(torch.cuda, "_lazy_call", None)
        if lazy_call is not None:
            lazy_call(lambda: probe._guarded(probe._on_cuda_init))
        # The one hook the probe leaves in Python's machinery: the `end` record, and everything taken back. Registered
        # with threading's exit hooks where there are (Python >= 3.9): they run when the main thread has finished,
        # before atexit's, and leave the script's atexit callbacks as it counts them.
        register = getattr(threading, "_register_atexit", None)
        try:
            if register is None:
                raise RuntimeError("no threading exit hooks")
            register(self._at_threads_exit)
        except RuntimeError:  # Python < 3.9, or torch imported while the interpreter shuts down
            atexit.register(self._on_exit)

    def uninstall(self):
        """Every patch and hook taken back (patches.py); the background runs end."""
        try:
            self.patches.restore_all()
            self.calls.release()
        except Exception:
            pass
        self.background.stop()
        self.beacon.close()

    def _starts_training(self):
        """The process trains: children it starts from now on run without the probe (config.py)."""
        if not self.withdrawn:
            self.withdrawn = True
            if self.environment is not None:
                self.environment.trains()
            self.background.ensure()  # the watchdog watches from the first step on

    def _optimizer_steps(self):
        """The first optimizer step: the patches only the fallbacks needed are taken back."""
        self.patches.restore("optimizer-init")
        if self.batch_calls > 0:
            # Steps come from the optimizer and batches from the DataLoader: backward passes and the model's input are
            # no longer needed (a loop without a DataLoader keeps them: each micro-batch's forward is its batch). Where
            # sys.monitoring watches the backward (nothing of it visible to the script), it stays until the window is
            # done: its time in the window's steps and outside them tells the profiler's cost (`backwardS`).
            if self.backward_code is not None and not self.window_done:
                self.backward_until_window = True
            else:
                self.patches.restore("backward")
            self.root_watch.disarm()

    def _before_fork(self):
        if self.pid == os.getpid() and not self.disabled:
            self.background.wait_jobs(FORK_WAIT_S)

    def _after_fork(self):
        """In a forked child: a new process, which decides at its first hook whether it trains."""
        self.pid = os.getpid()
        self.role = None
        self.sender.after_fork()
        self.beacon.after_fork()
        # The parent's loaders and the lock its background run may have held at the fork are not this process's.
        self.loader_watch = LoaderWatch()
        self.thread_cpu = ThreadCpuWatch()
        self.background = Background(self)
        self.sender.wake = self.background.wake
        self.tag = "rank%d" % self.cfg.rank if self.cfg.rank is not None else "pid%d" % self.pid
        if self.prof is not None and self.window_thread == threading.get_ident() and self._is_legacy(self.prof):
            # Forked inside the window, from its thread: the child inherits the thread's enabled profiler (its own
            # profiler would fail "already enabled"). The CPU profiler's state is the thread's alone: taken back.
            # (Kineto's, in a CUDA process, is left: stopping it in a child could meet the parent's CUPTI state.)
            try:
                self.torch.autograd._disable_profiler_legacy()
            except Exception:
                pass
        self.prof = None
        self.prof_step_fn = None
        self.window_done = True  # the parent's window is the parent's
        self.time_state = "done"
        # The parent's sampled loop is not the child's: every step of its own is seen until it settles.
        if self.burst_at is not None:
            self._end_quiet()
        self.feed = self.feed_id = None

    # ---------- the model ----------

    def _on_root_discovered(self, module):
        self._starts_training()
        dim, evidence, seq_module = batch_dim_of(module)
        self.batch_dim = (dim, evidence)
        self.seq_module = weakref.ref(seq_module) if seq_module is not None and seq_module is not module else None
        if self.batch_calls == 0 and self.backward_calls == 0 and not self.optimizer_stepped:
            self.root_watch.arm(persistent=True)  # forwards may be the steps: each one is seen until a backward

    def _on_root_forward(self, args, kwargs, ident):
        torch = self.torch
        now = time.perf_counter()
        self.last_activity = now
        self.forward_calls += 1
        modes = self.forward_grad_modes
        inference_on = self.inference_mode_on
        if inference_on is not None and inference_on():
            modes[2] += 1
        elif torch.is_grad_enabled():
            modes[0] += 1
        else:
            modes[1] += 1
        if self.autocast_dtype is None:
            self.autocast_dtype = _autocast_dtype(torch)
        self._forward_step(now, ident)  # a forward that starts a step ends the one before, before its batch counts
        if self.step_source not in (None, "forward") and not torch.is_grad_enabled():
            # An evaluation call between training steps is not the step's work; the watch stays armed for the next
            # training forward (the evaluation's module calls pay for that, not the training's).
            if not self.root_watch.persistent:
                self.root_watch.arm()
            return
        # Samples of the training forwards only when steps are training steps (an evaluation pass between them is
        # not the step's work); every forward when forwards are the steps.
        self.forwards_since_backward += 1
        reader = self.batch_reader
        if not reader.readable():
            self.input_samples_known = self.input_tokens_known = False
            self.input_forwards += 1
            return
        first = reader.first_argument(args, kwargs)
        if self.root_input_shape is None and first is not None:
            self.root_input_shape = tuple(first.shape)
            self._check_batch_dim()
        # A sequence-first model's input is [seq, batch, ...]: the batch is its second dimension.
        bd = self.batch_dim[0] if self.batch_dim is not None else 0
        dim = bd if first is not None and len(first.shape) > bd else 0
        n = reader.size(first, dim)
        if n is None:
            self.input_samples_known = False
        else:
            self.input_samples += n
        ids = safe.get(kwargs, "input_ids")
        ids = first if ids is None else ids
        tok = reader.tokens(ids, dim)
        if tok is None:
            self.input_tokens_known = False
        else:
            self.input_tokens += tok[0]
            self.input_seq_len = tok[1]
        self.input_forwards += 1

    def _check_batch_dim(self):
        """A sequence-first module inside the model may get the model's input transposed (the model turned its
        [batch, seq] input around before it): its first call, read through one global pre-hook, tells."""
        seq = self.seq_module() if self.seq_module is not None else None
        if seq is None or self.root_watch.instance is not None:
            return  # (a compiled model's modules run inside compiled code: the flag stands)
        probe = self
        handles = []
        torch = self.torch
        reader = self.batch_reader

        def on_call(mod, args):
            if mod is not seq or not reader.readable() or getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)():
                return None
            for h in handles:
                h.remove()  # torch iterates over a copy of the hooks: removing inside one is safe
            del handles[:]
            probe._guarded(probe._confirm_batch_dim, args)
            return None

        h = hooks.global_forward_pre_hook(torch, on_call)
        if h is not None:
            handles.append(h)
            self.patches.add_undo("batch-dim-check", lambda: [h.remove() for h in handles])

    def _confirm_batch_dim(self, args):
        x = self.batch_reader.first_argument(args, {})
        r = self.root_input_shape
        if x is None or r is None or len(x.shape) < 2 or len(r) < 2 or r[0] == r[1]:
            return  # nothing to compare, or a square input: the flag stands
        if x.shape[1] == r[0]:
            # Its batch (dimension 1) is the model input's dimension 0: the model transposed a batch-first input.
            self.batch_dim = (0, "%s, fed the input's dimension 0 as its batch (transposed inside the model)" % self.batch_dim[1])

    def _send_model(self, when):
        optimizer = self.primary_optimizer() if self.primary_optimizer is not None else None
        root = self.root_watch.root() if self.root_watch is not None else None
        summary = model_record(self.torch, optimizer, root, self.autocast_dtype, self.batch_dim if root is not None else None)
        if when == "time" and not summary["found"]:
            return  # a loop of functions: no model to describe (yet)
        self.model_sent = when
        self._queue("model", summary)

    # ---------- CUDA ----------

    def _on_cuda_init(self):
        self.cuda_on = True
        torch = self.torch
        # CUDA graphs replay only once CUDA is up: a process that never uses it keeps CUDAGraph.replay untouched
        # (a wrapper, where sys.monitoring is missing).
        patches.install_graph_replay(self, self.patches, torch)
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None:
            attach(lambda device, alloc, device_alloc, device_free: self._guarded(self._on_oom, device, alloc, device_alloc, device_free))
        if self.cfg.memory_history_always:
            self.gpu.start_history()
        if self.withdrawn:
            self.background.ensure()  # the watchdog, now that the process uses CUDA (a training that started on CPU)
        self._arm_time_window()

    def _on_oom(self, device, alloc_bytes, device_allocated_bytes, device_free_bytes):
        path = None
        if self.oom_snapshot is None and self.cfg.run_dir:
            path = os.path.join(self.cfg.run_dir, "oom-%s.pickle" % self.tag)
            self.torch.cuda.memory._dump_snapshot(path)
            self.oom_snapshot = path
        self._announce()
        self._queue(
            "oom",
            {"step": self.step + 1, "device": device, "allocBytes": alloc_bytes, "deviceAllocatedBytes": device_allocated_bytes, "deviceFreeBytes": device_free_bytes, "snapshot": path},
            now=True,
        )

    # ---------- the background run's tick ----------

    def _on_loader_iter(self, loader, it, t0=None):
        if self.batches_paused:
            # A new epoch or another loader between bursts: its batches are seen again from here (the epoch's first
            # batch, another iterator's); the next step, begun before, is left out of the statistics.
            self._leave_quiet(self.step_thread)
            self.mark_next_step("sampling")
        if loader is not None and it is not None:
            self.loader_watch.on_iter(loader, it, self.step, t0)

    def _background_tick(self):
        self.sender.flush(wait_s=2.0)
        now = time.perf_counter()
        if self.announced and not self.ended:
            self._queue_readings(now)
        if self.last_boundary is not None and not self.ended and self.step_thread is not None:
            progress = (self.step, self.batch_calls, self.forward_calls, self.backward_calls)
            stall = self.watchdog.check(progress, now, self.host_step_times, self.step_thread, self.last_boundary, self.step)
            if stall is not None:
                self._queue("stall", stall)
                self.sender.flush(wait_s=2.0)
        self._window_timers(now)

    def _inline_tick(self, now):
        """The tick's work without a timer (background.run_inline, on the stepping thread): the records the socket did
        not take (never waiting), the readings, and a step window past its time limit closed here."""
        self.sender.flush(block=False)
        if self.announced and not self.ended:
            self._queue_readings(now)
        if self.prof is not None:
            self._close_if_overdue(now)

    def needs_timer(self):
        """Whether a duty needs the timer's runs (background.py): the watchdog where doctor diagnoses hangs (a process
        that uses CUDA, a rank of a distributed run), or an armed time window."""
        cfg = self.cfg
        if self.time_armed_at is not None and self.time_state != "done":
            return True
        return cfg.stall_floor_s > 0 and (self.cuda_on or (cfg.world_size or 1) > 1)

    def _queue_readings(self, now, force=False):
        """The periodic readings due now (`force`: the last, at the end): each DataLoader's (loader.py), and the CPU by
        thread (threads.py) once the steps run, since its readings are shares of steps."""
        for fields in self.loader_watch.records(now, self.step, force):
            self._queue("loader", fields)
        if self.step_thread is not None:
            for fields in self.thread_cpu.records(now, self.step, force):
                self._queue("cpu", fields)

    def tick_s(self):
        """The seconds until the next background run: each is a moment a thread of the probe's exists (ticker.py), so
        they come no oftener than something is due. While the loop moves: the readings (READ_EVERY_S), finer while a
        step window is open (its time limit) or the time window waits; once nothing moves, the readings are shares of no
        step and only the watchdog is due, at a tenth of its floor."""
        cfg = self.cfg
        progress = (self.step, self.batch_calls, self.forward_calls, self.backward_calls)
        idle = progress == self.tick_progress
        self.tick_progress = progress
        if cfg.stall_floor_s > 0:
            tick = cfg.stall_floor_s / 10.0 if idle else min(READ_EVERY_S, cfg.stall_floor_s / 10.0)
        else:
            tick = IDLE_TICK_S if idle else READ_EVERY_S
        if self.prof is not None and self.window_kind == "steps":
            tick = min(tick, TICK_S)
        if self.time_armed_at is not None and self.time_state != "done":
            tick = min(tick, TICK_S, cfg.time_after_s / 4.0, cfg.time_window_s / 4.0)
        return max(0.05, tick)

    # ---------- the records of the process's life ----------

    def _announce(self):
        if self.announced:
            return
        self.announced = True
        torch = self.torch
        cudnn = None
        try:
            # Loading cuDNN to ask its version is left to processes that use CUDA already (gpu.announce_fields).
            cudnn = torch.backends.cudnn.version() if torch is not None and self.gpu is not None and self.gpu.on() else None
        except Exception:
            pass
        cfg = self.cfg
        self._queue(
            "hello",
            {
                "probeVersion": __version__,
                "python": platform.python_version(),
                "torch": getattr(torch, "__version__", None),
                "cudnn": cudnn,
                "cuda": self.gpu.announce_fields() if self.gpu is not None else {"available": False, "initialized": False, "version": None, "devices": [], "currentDevice": None},
                "hostname": os.uname().nodename,  # (socket.gethostname() is an audit event the script would see)
                "argv": list(sys.argv),
                "localRank": cfg.local_rank,
                "worldSize": cfg.world_size,
                "stepHook": self.step_hook,
                "profileAt": cfg.profile_at,
                "profileSteps": cfg.profile_steps,
                "maxSteps": cfg.max_steps,
            },
        )

    def _end(self, reason):
        if self.ended:
            return
        self.ended = True
        gpu_times = self.gpu.last_step_times() if reason in ("exit", "max-steps") and self.gpu is not None else []
        self._queue_readings(time.perf_counter(), force=True)  # up to the end
        modes = self.forward_grad_modes
        grad_modes = {"grad": modes[0], "noGrad": modes[1], "inference": modes[2]}
        self._queue("end", {"reason": reason, "steps": self.step, "exception": self.exception, "gpuStepTimes": gpu_times, "forwardGradModes": grad_modes}, now=True)

    def _on_exception(self, etype, value):
        name = safe.type_name(value)
        # The message without the exception's own `__str__` (the script's code): its arguments when they are text.
        args = safe.attr(value, "args", ())
        plain = safe.head(args, 8)
        message = BaseException.__str__(value) if all(_plain_arg(a) for a in plain) else name
        # cuBLAS and cuDNN fail their own workspace allocations with ALLOC_FAILED: memory ran out as well.
        oom = name == "OutOfMemoryError" or "out of memory" in message.lower() or "STATUS_ALLOC_FAILED" in message
        self.exception = name
        self._announce()
        self._queue("exception", {"step": self.step, "exception": name, "message": message[:2000], "outOfMemory": oom}, now=True)
        self._stop_profiler("exit")
        self.background.wait_jobs(60.0)
        self._end("interrupted" if name == "KeyboardInterrupt" else "exception")

    def _at_threads_exit(self):
        """When the main thread has finished, before the interpreter waits for the other non-daemon threads: while one
        runs (it may train, or start to), the end waits for atexit, which runs once they have ended."""
        me = threading.current_thread()
        if any(t is not me and not t.daemon and t.is_alive() for t in threading.enumerate()):
            atexit.register(self._on_exit)
            return
        self._on_exit()

    def _on_exit(self):
        """At the interpreter's exit (threading's exit hooks, or atexit): the uncaught exception that ended the script
        (the interpreter keeps it in sys.last_value before either runs), the window's export, the end record; then
        nothing stays."""
        if self.pid != os.getpid() or self.role == "off":
            return
        try:
            if not self.disabled and not self.ended and self.torch is not None:
                error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
                if self.role is None and not self._decide_role():
                    return
                if error is not None:
                    self._guarded(self._on_exception, type(error), error)
                else:
                    self._guarded(self._stop_profiler, "exit")
                    self.background.wait_jobs(60.0)
                    self._guarded(self.gpu.stop_history_if_pending)
                    if self.announced:
                        self._guarded(self._end, "exit")
            self.background.wait_jobs(60.0)
            self.sender.flush(wait_s=5.0)
        finally:
            self.uninstall()
            self.sink.close()
