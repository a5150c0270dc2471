"""The profiler window: where it opens (steady state, a fixed step, rank 0's plan), its steps, its end, its export,
and the time window of a run without steps.

It never meets a profiler of the script's: it does not open while one is active or prepared (`torch.autograd.
_profiler_enabled()`, and every `torch.autograd.profiler.profile` the script prepared and has not stopped, seen
through the one method the probe wraps, `profile._prepare_trace`, which every profiler of torch's calls first), it
stops itself when the script prepares one, and it never stops a profiler it did not start. It is opened and stopped
on the thread that steps (torch's CPU op callbacks belong to the thread that starts the profiler) and closes after
its steps, or after WINDOW_LIMIT_STEPS median steps (at least WINDOW_LIMIT_MIN_S) without a step end, so a loop that
ends inside it does not leave it open over the code that follows. Stopping is kept short on the stepping thread: the
trace and the memory snapshot are written by the background work (export.py), and the steps that overlap that work carry
`probeWork` in their records, so the step statistics leave them out.

The window talks to the probe (`life`, core.py) through `guarded()`, `announce()`, `disabled`, `tag` and `main_ident`;
it reads the steps (steps.py) and the model (modelwatch.py) through their public methods and counters.
"""
import json
import os
import threading
import time

from . import export, safe
from .watchdog import median

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
# A step window with no step end for this many median steps (and at least this long) is closed by time.
WINDOW_LIMIT_STEPS = 10
WINDOW_LIMIT_MIN_S = 1.0
# Every module of the probe: a window is never started or stopped in the middle of one of them.
_PACKAGE = __name__.rsplit(".", 1)[0] + "."


def window_reason(nxt, profile_at, profile_fixed, profile_steps, max_steps, step_times, waits):
    """Why the window opens at step `nxt`, or None to wait: "fixed" (GPUWISE_PROFILE_AT given), "settled" (step
    times steady and the DataLoader wait no longer falling), "cap" (never settled: open anyway, also when a --steps
    limit leaves just room for the window). `step_times` and `waits`: the last 2 x STEADY_WINDOW steps'."""
    if nxt < profile_at:
        return None
    if profile_fixed:
        return "fixed"  # the first step from it on where no profiler of the script's runs
    last_room = max_steps is not None and nxt + profile_steps > max_steps
    if last_room or nxt >= profile_at * STEADY_CAP_FACTOR:
        return "cap"
    t, w = step_times, waits
    if len(t) < 2 * STEADY_WINDOW:
        return None
    before, recent = median(t[:STEADY_WINDOW]), median(t[STEADY_WINDOW:])
    if before <= 0 or abs(recent - before) > STEADY_TOLERANCE * before:
        return None
    wait_before, wait_recent = sum(w[:STEADY_WINDOW]), sum(w[STEADY_WINDOW:])
    # Falling by more than the tolerance and by more than 1% of the steps: workers still filling queues.
    if wait_before - wait_recent > max(STEADY_TOLERANCE * wait_before, 0.01 * sum(t[STEADY_WINDOW:])):
        return None
    return "settled"


def in_probe(frame):
    """Whether `frame` (or a caller of it) is the probe's own code."""
    f = frame
    while f is not None:
        if (f.f_globals.get("__name__") or "").startswith(_PACKAGE):
            return True
        f = f.f_back
    return False


def _write_json_atomic(path, obj):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:  # (an encoding named: no EncodingWarning under -X warn_default_encoding)
        json.dump(obj, f)
    os.replace(tmp, path)


def _read_window_plan(path):
    """(first step, reason) from rank 0's plan, or None while there is none (or it cannot be read yet)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        return (int(d["step"]), str(d["reason"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Window(object):
    def __init__(self, cfg, steps, profiler, sender, background, main_call, life):
        self.cfg = cfg
        self.steps = steps
        self.profiler = profiler
        self.sender = sender
        self.background = background
        self.main_call = main_call
        self.life = life
        self.torch = self.gpu = self.model = None  # at torch's import (install)
        self.prof = None  # the probe's profiler while its window is open
        self.prof_cuda = False
        self.first_step = None
        self.kind = None  # "steps" or "time"
        self.thread = None  # the thread that opened the profiler: the only one that may stop it
        self.opened_at = None
        self.done = False  # the step window is over (or will never open)
        self.plan = None  # (first step, reason) of a distributed run's common window
        self.own_ready_at = None  # the step at which this rank would have opened its window alone
        self.time_armed_at = None  # perf_counter() when the time window became possible (CUDA initialised)
        self.time_state = None  # None, "open" (profiling), "done"

    def install(self, torch, gpu, model):
        """At torch's import: torch, the GPU side, the model watch."""
        self.torch, self.gpu, self.model = torch, gpu, model

    def time_pending(self):
        """The time window is armed and not over."""
        return self.time_armed_at is not None and self.time_state != "done"

    def after_fork(self):
        """In a forked child: the parent's window is the parent's."""
        if self.prof is not None and self.thread == threading.get_ident():
            self.profiler.disable_inherited(self.prof)  # forked inside the window, from its thread
        self.prof = None
        self.profiler.drop_span()
        self.done = True
        self.time_state = "done"

    # ---------- the step window ----------

    def at_step_end(self, step):
        """Called on the stepping thread after step `step` ended. The window covers steps first .. first+K-1."""
        cfg = self.cfg
        if cfg.profile_steps <= 0 or not cfg.run_dir:
            self.done = True
            return
        if self.time_state == "open":
            return  # a time window that is open ends at its time (the steps started during it)
        nxt = step + 1
        if self.prof is None and not self.done:
            aligned = cfg.world_size is not None and cfg.world_size > 1 and not cfg.profile_fixed
            reason = self._aligned_reason(nxt) if aligned else self._window_reason(nxt)
            if reason is not None and self.profiler.free():
                self._start_profiler(nxt, reason)
        elif self.prof is not None and self.kind == "steps":
            self.profiler.exit_span()
            if nxt >= self.first_step + cfg.profile_steps:
                self.stop("steps")
            else:
                self.profiler.enter_span(nxt)

    def _window_reason(self, nxt):
        cfg = self.cfg
        return window_reason(nxt, cfg.profile_at, cfg.profile_fixed, cfg.profile_steps, cfg.max_steps, self.steps.host_step_times, self.steps.wait_times)

    def _aligned_reason(self, nxt):
        """The window of a distributed run: every rank profiles the same steps, or the rank that is profiled (its
        CPU slowed by the profiler) makes the others wait in their collectives, and the windows show that wait as
        exposed communication and rank imbalance. Rank 0 decides as a single process would and writes the first
        step, WINDOW_LEAD steps ahead, into the run directory (shared by the ranks of one node); the others poll
        for it at each step (one stat) and fall back to their own choice when it never comes (rank 0 without the
        probe, another node)."""
        cfg = self.cfg
        if self.plan is None:
            if cfg.rank == 0:
                reason = self._window_reason(nxt)
                if reason is None:
                    return None
                # A --steps limit that leaves just room for the window: every rank computes the same step.
                last_room = cfg.max_steps is not None and nxt + WINDOW_LEAD + cfg.profile_steps > cfg.max_steps
                self.plan = (nxt if last_room else nxt + WINDOW_LEAD, reason)
                _write_json_atomic(os.path.join(cfg.run_dir, WINDOW_PLAN_FILE), {"step": self.plan[0], "reason": reason})
            else:
                plan = _read_window_plan(os.path.join(cfg.run_dir, WINDOW_PLAN_FILE))
                if plan is not None:
                    self.plan = plan
                else:
                    own = self._window_reason(nxt)
                    if own is None:
                        return None
                    # Ranks in lockstep settle within a step or two of each other: a plan that has not come
                    # STEADY_WINDOW + 2 leads after this rank was ready will not come.
                    if self.own_ready_at is None:
                        self.own_ready_at = nxt
                    last_room = cfg.max_steps is not None and nxt + cfg.profile_steps > cfg.max_steps
                    late = nxt >= self.own_ready_at + STEADY_WINDOW + 2 * WINDOW_LEAD
                    return own if last_room or late else None
        first, reason = self.plan
        return reason if nxt >= first else None

    def _start_profiler(self, first_step, reason="fixed"):
        cuda_on = self.gpu.on()
        if not self._open_profiler(cuda_on):
            self.done = True  # the script profiles itself (on another thread): no window of ours
            return
        if cuda_on and not self.gpu.history_on:
            self.gpu.start_history()
        self.kind = "steps"
        self.first_step = first_step
        self.opened_at = time.perf_counter()
        record = {"step": first_step, "steps": self.cfg.profile_steps, "cuda": cuda_on, "reason": reason, "settled": reason in ("settled", "fixed"), "warmupSteps": first_step - 1, "aligned": self.plan is not None}
        if self.plan is None and self.own_ready_at is not None:
            record["ownReadyStep"] = self.own_ready_at  # a rank that waited for rank 0's plan in vain: since when
        self.sender.put_record("profile-start", record)
        self.profiler.enter_span(first_step)

    def _open_profiler(self, cuda_on):
        """Starts the profiler on this thread; False (and nothing started) when torch refuses (another profiler)."""
        kp = self.profiler.start(cuda_on, self._shapes_recordable())
        if kp is None:
            return False
        legacy = self.profiler.is_legacy(kp)
        self.prof = kp
        self.prof_cuda = cuda_on and not legacy
        self.thread = threading.get_ident()
        if not legacy:
            self.profiler.add_metadata()
        return True

    def _shapes_recordable(self):
        """Whether the window records the ops' input shapes. Not for a model whose inference takes TransformerEncoder's
        fast path (no gradients, nested tensors enabled): the profiler's shape callback cannot read a nested tensor's
        sizes, and torch 1.13 writes an error line on the script's stderr for each of its ops."""
        modes = self.model.grad_modes
        root = self.model.root() if self.model is not None else None
        if root is None or modes[0] > 0 or modes[1] + modes[2] == 0:
            return True
        for _, m in safe.named_modules(root):
            if "TransformerEncoder" in safe.class_names(m) and safe.attr(m, "enable_nested_tensor") is not False:
                return False
        return True

    def stop(self, why):
        """On the window's thread: stops the profiler (a CUDA synchronisation and the profiler's own stop, no more) and
        leaves the trace, the snapshot and the `profile-end` record to the background work. `why`: "steps", "time"
        (the time window's end, or a step window without step ends), "user-profiler", "exit", "error"."""
        prof = self.prof
        if prof is None or threading.get_ident() != self.thread:
            return
        self.prof = None
        try:
            self.profiler.exit_span()
        except Exception:
            pass
        timed = self.kind == "time"
        stop_t0 = time.perf_counter()
        profiled_s = stop_t0 - self.opened_at
        results, detach = self.profiler.stop(prof, self.prof_cuda, why)
        stop_s = time.perf_counter() - stop_t0  # the training thread's share of the window's end (the events collected)
        # A time window has no steps, and files of its own: a step window may still come after it.
        suffix = "-time" if timed else ""
        if timed:
            self.time_state = "done"
            fields = {"firstStep": None, "lastStep": None, "reason": "time", "durationS": profiled_s}
        else:
            self.done = True
            fields = {"firstStep": self.first_step, "lastStep": self.steps.step}
        fields["stopS"] = stop_s
        legacy = self.profiler.legacy if self.profiler.is_legacy(prof) else None
        if self.prof_cuda:
            # The script's own TEARDOWN_CUPTI=1 detaches it too (Kineto reads it at every stop).
            fields["cuptiDetached"] = detach or (legacy is None and os.environ.get("TEARDOWN_CUPTI") == "1")
        run_dir, tag, torch, gpu = self.cfg.run_dir, self.life.tag, self.torch, self.gpu
        trace = os.path.join(run_dir, "trace-%s%s.json" % (tag, suffix)) if run_dir and why != "error" else None
        snapshot = None
        device = None
        if gpu.history_on and run_dir:
            snapshot = os.path.join(run_dir, "snapshot-%s%s.pickle" % (tag, suffix))
            device = torch.cuda.current_device()
        keep_history = self.cfg.memory_history_always
        sender = self.sender

        def write():
            export.export(torch, gpu, legacy, prof, results, trace, snapshot, device, keep_history, fields)
            sender.put_record("profile-end", fields)

        self.background.ensure()
        self.background.submit("export", write)
        self.steps.mark_next_step("window-end")

    def _window_overdue(self, now):
        """A step window without a step end for its limit: the loop has left it (its end, an evaluation)."""
        if self.prof is None or self.kind != "steps":
            return False
        last = self.steps.clock.last_boundary
        last = self.opened_at if last is None else last
        times = self.steps.host_step_times
        limit = max(WINDOW_LIMIT_MIN_S, WINDOW_LIMIT_STEPS * median(times)) if times else WINDOW_LIMIT_MIN_S
        return now - max(last, self.opened_at) > limit

    def close_if_overdue(self, now):
        """From a hook on the stepping thread."""
        if self._window_overdue(now):
            self.stop("time")

    # ---------- the script's own profilers ----------

    def on_user_profiler(self, prof):
        """The script prepares a profiler: ours stops first (on its thread), and opens no more while that one runs."""
        self.profiler.note_user_profiler(prof)
        if self.prof is not None:
            self.stop("user-profiler")

    # ---------- timers, from the background runs ----------

    def timers(self, now):
        """The time window's start and end, and a step window's time limit, carried out on the main thread."""
        if self.prof is not None and self.kind == "steps":
            if self._window_overdue(now) and self.thread == self.life.main_ident:
                self.main_call.request(self._on_main_tick)
            return
        if self.time_armed_at is None or self.time_state == "done":
            return
        cfg = self.cfg
        if self.time_state is None:
            if self.steps.step > 0 or self.prof is not None:
                self.time_state = "done"  # steps were found: the step window does the work
                return
            quiet_since = max(self.time_armed_at, self.steps.last_activity or 0.0)
            if now - quiet_since < cfg.time_after_s:
                return
        elif now - self.opened_at < cfg.time_window_s:
            return
        self.main_call.request(self._on_main_tick)

    def _on_main_tick(self, frame):
        """On the main thread, between two bytecodes of whatever it runs (see mainthread.py)."""
        if self.life.disabled or in_probe(frame):
            return  # never in the middle of the probe's own code: the next tick asks again
        self.life.guarded(self._main_tick)

    def _main_tick(self):
        now = time.perf_counter()
        if self.prof is not None:
            if self.kind == "time" and now - self.opened_at >= self.cfg.time_window_s:
                self.stop("time")
            elif self.kind == "steps" and self._window_overdue(now):
                self.stop("time")
            return
        if self.time_state is None and self.steps.step == 0 and self.time_armed_at is not None:
            self._start_time_window()

    def arm_time_window(self):
        """The time window becomes possible once the process has device work (CUDA initialised)."""
        cfg = self.cfg
        if self.time_armed_at is not None or cfg.time_after_s <= 0 or cfg.time_window_s <= 0 or cfg.profile_steps <= 0 or not cfg.run_dir:
            return
        if not self.main_call.available():
            return
        self.time_armed_at = time.perf_counter()
        self.background.ensure()

    def _start_time_window(self):
        if not self.profiler.free():
            self.time_state = "done"  # the script profiles itself: its profiler stays, no window of ours
            return
        quiet_s = time.perf_counter() - max(self.time_armed_at, self.steps.last_activity or 0.0)
        cuda_on = self.gpu.on()
        if not self._open_profiler(cuda_on):
            self.time_state = "done"
            return
        if cuda_on and not self.gpu.history_on:
            self.gpu.start_history()
        self.life.announce()
        if self.model.sent is None:
            self.model.send("time")
        self.kind = "time"
        self.opened_at = time.perf_counter()
        self.time_state = "open"  # after window_opened_at: the background run reads it then
        # No ProfilerStep span: analyze takes a trace without step markers as one step.
        self.sender.put_record(
            "profile-start",
            {"step": None, "steps": 0, "cuda": cuda_on, "reason": "time", "durationS": self.cfg.time_window_s, "quietS": quiet_s, "aligned": False},
        )
