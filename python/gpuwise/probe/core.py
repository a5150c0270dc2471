"""The probe object: its state, and the fail-open plumbing every hook runs through."""
import os
import sys
import threading

from ..transport import Sink
from .config import _first_int, _float_env, _int_env
from .gpu import GpuMixin
from .model import ModelMixin
from .patches import PatchesMixin
from .records import RecordsMixin
from .steps import StepsMixin
from .watchdog import WatchdogMixin
from .window import WindowMixin


class Probe(PatchesMixin, StepsMixin, ModelMixin, WindowMixin, WatchdogMixin, GpuMixin, RecordsMixin):
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
