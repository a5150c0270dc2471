"""The probe object: its parts wired together, its life (install when torch is imported, uninstall at the end, fork,
exit), and the fail-open plumbing every hook runs through. Its parts call back only its public methods."""
import atexit
import os
import sys
import threading
import time

from .. import PROTOCOL_VERSION
from ..transport import Sink
from . import config, patches
from .background import Background
from .batch import BatchReader
from .beacon import StepBeacon
from .calls import CallWatch
from .gpu import Gpu
from .life import exception_fields, hello_fields
from .loader import LoaderWatch
from .mainthread import MainThreadCall
from .modelwatch import ModelWatch
from .profiler import Profiler, profiler_classes
from .records import Sender
from .sampling import Sampler
from .steps import Steps
from .threads import ThreadCpuWatch
from .ticks import Ticks
from .watchdog import Watchdog
from .window import Window

# A fork waits at most this long for the background work's job (an export) to finish.
FORK_WAIT_S = 30.0


class Probe(object):
    """The probe's life; its parts: `steps` (steps.py), `window` (window.py), `model` (modelwatch.py, from torch's
    import), `sender` (records.py), `background` (background.py), `loader_watch` and `thread_cpu` (the readings)."""

    def __init__(self, env, environment=None):
        self.cfg = cfg = config.Settings(env)
        # Started by doctor (not a notebook): what of doctor's leaves the C environment once the process trains.
        self.environment = environment
        self.sink = Sink(cfg.socket_path, cfg.run_dir)
        self.background = Background(self)
        self.sender = Sender(self.sink, self.background.wake, cfg.rank)
        self.beacon = StepBeacon(cfg.run_dir)
        self.tag = "rank%d" % cfg.rank if cfg.rank is not None else "pid%d" % os.getpid()
        self.pid = os.getpid()
        self.protocol = PROTOCOL_VERSION
        self.patches = patches.Patches()
        self.main_call = MainThreadCall()
        self.main_ident = threading.main_thread().ident
        self.torch = None
        self.gpu = None
        self.model = None  # modelwatch.ModelWatch, from torch's import
        self.role = None  # None until the first hook decides: "main" (this process trains), or "off"
        self.disabled = False
        self.ended = False
        self.announced = False
        self.withdrawn = False  # doctor's variables left the C environment (children run without the probe)
        self.step_hook = None
        self.import_hook = None  # the post-import hook waiting for `import torch` (patches.py)
        self.exception = None
        self.oom_snapshot = None
        self.cuda_on = False  # CUDA initialised in this process (timing events, allocator figures)
        self.calls = CallWatch()  # the calls seen through sys.monitoring (patches.py)
        self.loader_watch = LoaderWatch()  # the DataLoaders iterated and their workers' CPU (loader.py)
        self.thread_cpu = ThreadCpuWatch()  # the process's CPU time by thread (threads.py)
        self.sampler = Sampler(cfg, self.calls, self.loader_watch)
        self.steps = Steps(cfg, self.sender, self.beacon, self.background, self.patches, self.sampler, self.thread_cpu, self.loader_watch, self)
        self.profiler = Profiler()  # torch's profiler as the window drives it (profiler.py)
        self.window = Window(cfg, self.steps, self.profiler, self.sender, self.background, self.main_call, self)
        watchdog = Watchdog(cfg.stall_floor_s, cfg.stall_repeat_s)
        self.ticks = Ticks(cfg, self.steps, self.window, self.sender, watchdog, self.loader_watch, self.thread_cpu, self)
        try:
            # A forked child (a DataLoader worker, a multiprocessing process) decides at its first hook; the fork
            # waits for a trace or snapshot being written (torch holds its locks meanwhile: a child would inherit them).
            os.register_at_fork(before=self._before_fork, after_in_child=self._after_fork)
        except Exception:
            pass

    # ---------- fail-open plumbing ----------

    def guarded(self, fn, *args):
        """Every hook's way in: nothing once the probe is off, and an error of the probe's switches it off."""
        if self.disabled:
            return None
        if self.role is None and not self._decide_role():
            return None
        try:
            return fn(*args)
        except SystemExit:
            raise  # only the probe's own --steps stop raises it
        except Exception as e:
            self.fail(e)
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

    def fail(self, e):
        """The probe's first internal error: one line on stderr, a record, and the probe off; the training goes on."""
        if self.disabled:
            return
        self.disabled = True
        try:
            sys.stderr.write("gpuwise probe: internal error, probe switched off, training continues: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass
        try:
            self.sender.put_record("probe-error", {"error": "%s: %s" % (type(e).__name__, e), "step": self.steps.step}, now=True)
        except Exception:
            pass
        try:
            self.window.stop("error")  # only on the window's own thread; elsewhere it stops at the exit
        except Exception:
            pass
        # Hooks are taken back only from the thread that runs them (a global hook removed from another thread could
        # change a dict torch is iterating); otherwise they pass through until the exit takes them back.
        if threading.get_ident() == (self.steps.thread or self.main_ident):
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

    # ---------- installation ----------

    def on_torch_imported(self, torch):
        if self.disabled:
            return
        try:
            self._install(torch)
        except Exception as e:
            self.fail(e)

    def _install(self, torch):
        self.torch = torch
        if self.environment is not None:
            self.environment.imported_torch()
        # Every import the probe needs, made now (on the thread importing torch) and never later from a hook, where
        # an import could meet a thread of the script importing torch's lazy modules.
        import torch.optim  # noqa: F401
        import torch.optim.optimizer  # noqa: F401
        import torch.autograd.profiler  # noqa: F401
        import torch.utils.data
        import torch.utils.data.dataloader as dl
        import torch.autograd.profiler_util  # noqa: F401
        import torch.jit._builtins  # noqa: F401

        self.profiler.install(torch, profiler_classes(torch))  # (imports the legacy profiler's module)
        self.gpu = gpu = Gpu(torch, self.cfg.gpu_timing, self.cfg.memory_stacks)
        self.cuda_on = gpu.on()  # (a notebook's later cell: CUDA may be up already)
        reader = BatchReader(torch)
        self.model = model = ModelWatch(torch, self.steps, reader, self.calls, self.patches, self.sender, self)
        self.window.install(torch, gpu, model)
        self.steps.install(gpu, model, self.window, reader)
        self._install_patches(torch, dl)
        if self.cfg.trial is not None:  # `tune --plan` only: the fixes a trial makes (trial.py)
            from . import trial

            trial.install(self, torch)
        model.root_watch.discover()
        self.patches.add_undo("root-watch", model.root_watch.remove_all)
        if self.cfg.time_cpu:
            self.window.arm_time_window()  # test knob: any torch process counts as device work
        # CUDA: the OOM observer (and history) and the graph replays as soon as CUDA initialises.
        lazy_call = getattr(torch.cuda, "_lazy_call", None)
        if lazy_call is not None:
            lazy_call(lambda: self.guarded(self._on_cuda_init))
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

    def _install_patches(self, torch, dl):
        p, steps = self.patches, self.steps
        self.step_hook = patches.install_optimizer(self, p, torch, steps)
        next_code = patches.install_dataloader(self, p, dl, steps, self.sampler, self.calls)
        backward_code = patches.install_backward(self, p, torch, steps, self.sampler, self.calls)
        self.sampler.watched(next_code, backward_code)  # paused between bursts (sampling.py)
        patches.install_compile(self, p, torch, self.model.root_watch)
        patches.install_profiler_guard(self, p, torch, self.window, self.profiler)

    def uninstall(self):
        """Every patch and hook taken back (patches.py); the background runs end."""
        try:
            self.patches.restore_all()
            self.calls.release()
        except Exception:
            pass
        self.background.stop()
        self.beacon.close()

    def starts_training(self):
        """The process trains: children it starts from now on run without the probe (config.py)."""
        if not self.withdrawn:
            self.withdrawn = True
            if self.environment is not None:
                self.environment.trains()
            self.background.ensure()  # the watchdog watches from the first step on

    # ---------- fork ----------

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
        self.loader_watch.after_fork()
        self.thread_cpu.after_fork()
        self.background.after_fork()
        self.tag = "rank%d" % self.cfg.rank if self.cfg.rank is not None else "pid%d" % self.pid
        self.window.after_fork()  # the parent's window is the parent's
        self.steps.after_fork()  # the parent's sampled loop is not the child's

    # ---------- CUDA ----------

    def _on_cuda_init(self):
        self.cuda_on = True
        torch = self.torch
        # CUDA graphs replay only once CUDA is up: a process that never uses it keeps CUDAGraph.replay untouched
        # (a wrapper, where sys.monitoring is missing).
        patches.install_graph_replay(self, self.patches, torch, self.steps, self.calls)
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None:
            attach(lambda device, alloc, device_alloc, device_free: self.guarded(self._on_oom, device, alloc, device_alloc, device_free))
        if self.cfg.memory_history_always:
            self.gpu.start_history()
        if self.withdrawn:
            self.background.ensure()  # the watchdog, now that the process uses CUDA (a training that started on CPU)
        self.window.arm_time_window()

    def _on_oom(self, device, alloc_bytes, device_allocated_bytes, device_free_bytes):
        path = None
        if self.oom_snapshot is None and self.cfg.run_dir:
            path = os.path.join(self.cfg.run_dir, "oom-%s.pickle" % self.tag)
            self.torch.cuda.memory._dump_snapshot(path)
            self.oom_snapshot = path
        self.announce()
        fields = {"step": self.steps.step + 1, "device": device, "allocBytes": alloc_bytes, "deviceAllocatedBytes": device_allocated_bytes, "deviceFreeBytes": device_free_bytes, "snapshot": path}
        self.sender.put_record("oom", fields, now=True)

    # ---------- the background work's duties (ticks.py) ----------

    def needs_timer(self):
        return self.ticks.needs_timer()

    def tick_s(self):
        return self.ticks.tick_s()

    def background_tick(self):
        self.ticks.timed()

    def inline_tick(self, now):
        self.ticks.inline(now)

    def profiler_free(self):
        return self.profiler.free()

    # ---------- the records of the process's life ----------

    def announce(self):
        """The `hello` record, once: before the first record that needs it (a step, the time window, an error)."""
        if self.announced:
            return
        self.announced = True
        self.sender.put_record("hello", hello_fields(self.torch, self.gpu, self.cfg, self.step_hook))

    def end(self, reason):
        """The `end` record, once: the last readings, the GPU's last step times (a clean end), the forwards' modes."""
        if self.ended:
            return
        self.ended = True
        gpu_times = self.gpu.last_step_times() if reason in ("exit", "max-steps") and self.gpu is not None else []
        self.ticks.readings(time.perf_counter(), force=True)  # up to the end
        modes = self.model.grad_modes if self.model is not None else [0, 0, 0]
        grad_modes = {"grad": modes[0], "noGrad": modes[1], "inference": modes[2]}
        self.sender.put_record("end", {"reason": reason, "steps": self.steps.step, "exception": self.exception, "gpuStepTimes": gpu_times, "forwardGradModes": grad_modes}, now=True)

    def stop_after(self, step, why="--steps"):
        """`--steps`, or a trial's steadiness stop (steady.py; `why` says which): step `step` was the last; the process
        exits with status 0."""
        self.window.stop("steps")
        self.background.wait_jobs(60.0)
        self.end("max-steps")
        sys.stderr.write("gpuwise probe: stopping after %d steps (%s)\n" % (step, why))
        sys.stderr.flush()
        raise SystemExit(0)

    def on_exception(self, etype, value):
        """The exception that ends the script (or a notebook cell): its record, the window's export, the end."""
        name, message, oom = exception_fields(value)
        self.exception = name
        self.announce()
        self.sender.put_record("exception", {"step": self.steps.step, "exception": name, "message": message[:2000], "outOfMemory": oom}, now=True)
        self.window.stop("exit")
        self.background.wait_jobs(60.0)
        self.end("interrupted" if name == "KeyboardInterrupt" else "exception")

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
                    self.guarded(self.on_exception, type(error), error)
                else:
                    self.guarded(self.window.stop, "exit")
                    self.background.wait_jobs(60.0)
                    self.guarded(self.gpu.stop_history_if_pending)
                    if self.announced:
                        self.guarded(self.end, "exit")
            self.background.wait_jobs(60.0)
            self.sender.flush(wait_s=5.0)
        finally:
            self.uninstall()
            self.sink.close()
