"""The profiler window: where it opens (steady state, a fixed step, rank 0's plan), its steps, its end, its export,
and the time window of a run without steps.

It never meets a profiler of the script's: it does not open while one is active or prepared (`torch.autograd.
_profiler_enabled()`, and every `torch.autograd.profiler.profile` the script prepared and has not stopped, seen
through the one method the probe wraps, `profile._prepare_trace`, which every profiler of torch's calls first), it
stops itself when the script prepares one, and it never stops a profiler it did not start. It is opened and stopped
on the thread that steps (torch's CPU op callbacks belong to the thread that starts the profiler) and closes after
its steps, or after WINDOW_LIMIT_STEPS median steps (at least WINDOW_LIMIT_MIN_S) without a step end, so a loop that
ends inside it does not leave it open over the code that follows. Stopping is kept short on the stepping thread: the
trace and the memory snapshot are written by the background work (background.py), and the steps that overlap that work carry
`probeWork` in their records, so the step statistics leave them out.
"""
import contextlib
import json
import os
import pickle
import sys
import threading
import time
import warnings
import weakref

from . import safe
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


class TraceUnavailable(object):
    """A window whose trace could not be written, and why (the `profile-end` record's `traceError`)."""

    def __init__(self, why):
        self.why = why


def _written(path, write, *args):
    """(path, None) once `write(*args)` wrote `path`, else (None, why): a TraceUnavailable it returned, or an OSError
    (a full disk, a run folder removed, descriptors the script closed under the writer: os.closerange while the export
    runs), which is the window's loss, not the probe's error: what was written is removed. (None, None) without a
    path (nothing to write)."""
    if path is None:
        return None, None
    try:
        got = write(*args)
    except OSError as e:
        try:
            os.remove(path)
        except OSError:
            pass
        return None, "%s could not be written: %s" % (os.path.basename(path), e)
    return (None, got.why) if isinstance(got, TraceUnavailable) else (got, None)


def _matched_ranges(thread_records):
    """The legacy profiler's records, per thread, without the range ends ("pop") whose start ("push") the same
    thread did not record before them in the window."""
    out = []
    for records in thread_records:
        pushed = set()
        kept = []
        for r in records:
            kind = r.kind()
            if kind == "push":
                pushed.add((r.handle(), r.node_id()))
            elif kind == "pop" and (r.handle(), r.node_id()) not in pushed:
                continue
            kept.append(r)
        out.append(kept)
    return out


@contextlib.contextmanager
def _quiet_encoding():
    """Under `-X warn_default_encoding`, torch's trace writer (an `open()` without an encoding) would warn on the
    script's stderr: the EncodingWarning is ignored while it writes. Only then: `catch_warnings` swaps the process's
    filter list, which a filter the script sets meanwhile from another thread would not outlive."""
    if not getattr(sys.flags, "warn_default_encoding", 0):
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EncodingWarning)  # noqa: F821 (Python >= 3.10, as the flag)
        yield


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


class WindowMixin(object):
    """The probe's profiler window (state set in Probe.__init__: `prof`, `window_*`, `time_*`)."""

    # ---------- the step window ----------

    def _profiler_boundary(self):
        """Called on the stepping thread after step `self.step` ended. The window covers steps first .. first+K-1."""
        cfg = self.cfg
        if cfg.profile_steps <= 0 or not cfg.run_dir:
            self.window_done = True
            return
        if self.time_state == "open":
            return  # a time window that is open ends at its time (the steps started during it)
        nxt = self.step + 1
        if self.prof is None and not self.window_done:
            aligned = cfg.world_size is not None and cfg.world_size > 1 and not cfg.profile_fixed
            reason = self._aligned_reason(nxt) if aligned else self._window_reason(nxt)
            if reason is not None and self._profiler_free():
                self._start_profiler(nxt, reason)
        elif self.prof is not None and self.window_kind == "steps":
            self._exit_step_span()
            if nxt >= self.prof_first_step + cfg.profile_steps:
                self._stop_profiler("steps")
            else:
                self._enter_step_span(nxt)

    def _window_reason(self, nxt):
        cfg = self.cfg
        return window_reason(nxt, cfg.profile_at, cfg.profile_fixed, cfg.profile_steps, cfg.max_steps, self.host_step_times, self.wait_times)

    def _aligned_reason(self, nxt):
        """The window of a distributed run: every rank profiles the same steps, or the rank that is profiled (its
        CPU slowed by the profiler) makes the others wait in their collectives, and the windows show that wait as
        exposed communication and rank imbalance. Rank 0 decides as a single process would and writes the first
        step, WINDOW_LEAD steps ahead, into the run directory (shared by the ranks of one node); the others poll
        for it at each step (one stat) and fall back to their own choice when it never comes (rank 0 without the
        probe, another node)."""
        cfg = self.cfg
        if self.window_plan is None:
            if cfg.rank == 0:
                reason = self._window_reason(nxt)
                if reason is None:
                    return None
                # A --steps limit that leaves just room for the window: every rank computes the same step.
                last_room = cfg.max_steps is not None and nxt + WINDOW_LEAD + cfg.profile_steps > cfg.max_steps
                self.window_plan = (nxt if last_room else nxt + WINDOW_LEAD, reason)
                _write_json_atomic(os.path.join(cfg.run_dir, WINDOW_PLAN_FILE), {"step": self.window_plan[0], "reason": reason})
            else:
                plan = _read_window_plan(os.path.join(cfg.run_dir, WINDOW_PLAN_FILE))
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
                    last_room = cfg.max_steps is not None and nxt + cfg.profile_steps > cfg.max_steps
                    late = nxt >= self.own_ready_at + STEADY_WINDOW + 2 * WINDOW_LEAD
                    return own if last_room or late else None
        first, reason = self.window_plan
        return reason if nxt >= first else None

    def _profiler_free(self):
        """No profiler of the script's is enabled on this thread or prepared and not stopped: the window may open."""
        torch = self.torch
        try:
            if torch.autograd._profiler_enabled():
                return False
        except Exception:
            return False
        for ref in list(self.user_profilers.values()):
            p = ref()
            if p is not None and safe.attr(p, "entered") is True and safe.attr(p, "kineto_results") is None:
                return False
        return True

    def _start_profiler(self, first_step, reason="fixed"):
        cuda_on = self.gpu.on()
        if not self._open_profiler(cuda_on):
            self.window_done = True  # the script profiles itself (on another thread): no window of ours
            return
        if cuda_on and not self.gpu.history_on:
            self.gpu.start_history()
        self.window_kind = "steps"
        self.prof_first_step = first_step
        self.window_opened_at = time.perf_counter()
        record = {"step": first_step, "steps": self.cfg.profile_steps, "cuda": cuda_on, "reason": reason, "settled": reason in ("settled", "fixed"), "warmupSteps": first_step - 1, "aligned": self.window_plan is not None}
        if self.window_plan is None and self.own_ready_at is not None:
            record["ownReadyStep"] = self.own_ready_at  # a rank that waited for rank 0's plan in vain: since when
        self._queue("profile-start", record)
        self._enter_step_span(first_step)

    def _open_profiler(self, cuda_on):
        """Starts the profiler on this thread; False (and nothing started) when torch refuses (another profiler)."""
        torch = self.torch
        legacy = self.legacy_profiler
        if not cuda_on and legacy is not None:
            # A process without CUDA: the legacy profiler, which records the CPU ops and never starts Kineto. On a
            # CUDA build, Kineto initialises the driver and starts threads of its own: a process forked afterwards
            # that exits normally then aborts joining them, and one that trains on a thread other than the one that
            # imported torch gets Kineto's error on stderr.
            kp = legacy(record_shapes=self._shapes_recordable())
            self.own_profiler = kp
            try:
                kp._start_trace()
            except RuntimeError:
                self.own_profiler = None
                return False
            self.prof = kp
            self.prof_cuda = False
            self.window_thread = threading.get_ident()
            return True
        # The autograd profiler that torch.profiler.profile drives, built here with the options it would pass: going
        # through torch.profiler would import torch._inductor (which can deadlock with a thread of the script
        # importing torch._dynamo), may set environment variables, and on torch 2.x warns on the script's stderr
        # that it "clears events at the end of each cycle". The distributed metadata it adds is added below.
        kp = self.profiler_class(**self.profiler_options(cuda_on))
        self.own_profiler = kp
        self.profiler_opening = True  # the profiler guard (patches.py) lets this one through
        try:
            kp._prepare_trace()
            kp._start_trace()
        except RuntimeError:
            self.own_profiler = None
            return False
        finally:
            self.profiler_opening = False
        self.prof = kp
        self.prof_cuda = cuda_on
        self.window_thread = threading.get_ident()
        # The metadata torch.profiler's start_trace adds (analyze groups ranks' traces by it); only Kineto keeps it (the
        # shim of a torch without it logs a warning on stderr instead).
        info = self._distributed_info() if torch.autograd.kineto_available() else None
        if info is not None:
            try:
                torch.autograd._add_metadata_json("distributedInfo", json.dumps(info))
            except Exception:
                pass
        return True

    def _is_legacy(self, prof):
        legacy = self.legacy_profiler
        return legacy is not None and isinstance(prof, legacy)

    def profiler_options(self, cuda_on):
        """The keyword arguments of `torch.autograd.profiler.profile` for a Kineto trace of the CPU (and CUDA), in the
        spelling of this torch: `use_device="cuda"` from 2.4 (`use_cuda` then warns it is deprecated), else
        `use_cuda`."""
        params = self.profiler_params
        opts = {"use_kineto": True, "record_shapes": self._shapes_recordable()}
        if "use_cpu" in params:
            opts["use_cpu"] = True
        if cuda_on:
            if "use_device" in params:
                opts["use_device"] = "cuda"
            else:
                opts["use_cuda"] = True
        return opts

    def _shapes_recordable(self):
        """Whether the window records the ops' input shapes. Not for a model whose inference takes TransformerEncoder's
        fast path (no gradients, nested tensors enabled): the profiler's shape callback cannot read a nested tensor's
        sizes, and torch 1.13 writes an error line on the script's stderr for each of its ops."""
        modes = self.forward_grad_modes
        root = self.root_watch.root() if self.root_watch is not None else None
        if root is None or modes[0] > 0 or modes[1] + modes[2] == 0:
            return True
        for _, m in safe.named_modules(root):
            if "TransformerEncoder" in safe.class_names(m) and safe.attr(m, "enable_nested_tensor") is not False:
                return False
        return True

    def _no_dispatch(self):
        """The context in which the probe's own ops run (the ProfilerStep spans' record_function): no torch function or
        dispatch mode of the script's sees them (an op-counting TorchDispatchMode would count them)."""
        return safe.no_modes(self.torch, dispatch=True)

    def _distributed_info(self):
        dist = getattr(self.torch, "distributed", None)
        try:
            if dist is None or not dist.is_available() or not dist.is_initialized():
                return None
            return {"backend": dist.get_backend(), "rank": dist.get_rank(), "world_size": dist.get_world_size()}
        except Exception:
            return None

    def _enter_step_span(self, step):
        # The same `ProfilerStep#N` spans torch.profiler's schedule writes, which analyze reads as steps.
        with self._no_dispatch():  # (torch 1.x's record_function also makes a tensor when it is built)
            self.prof_step_fn = self.torch.autograd.profiler.record_function("ProfilerStep#%d" % step)
            self.prof_step_fn.__enter__()

    def _exit_step_span(self):
        if self.prof_step_fn is not None:
            span, self.prof_step_fn = self.prof_step_fn, None
            with self._no_dispatch():
                span.__exit__(None, None, None)

    def _stop_profiler(self, why):
        """On the window's thread: stops the profiler (a CUDA synchronisation and the profiler's own stop, no more) and
        leaves the trace, the snapshot and the `profile-end` record to the background work. `why`: "steps", "time"
        (the time window's end, or a step window without step ends), "user-profiler", "exit", "error"."""
        prof = self.prof
        if prof is None or threading.get_ident() != self.window_thread:
            return
        self.prof = None
        try:
            self._exit_step_span()
        except Exception:
            pass
        torch = self.torch
        timed = self.window_kind == "time"
        stop_t0 = time.perf_counter()
        profiled_s = stop_t0 - self.window_opened_at
        if self.prof_cuda:
            torch.cuda.synchronize()
        detach = False
        if self._is_legacy(prof):
            results = torch.autograd._disable_profiler_legacy()
        else:
            # CUPTI left attached after a stop slows every later launch (a compiled ResNet-50 on an H200: 23-24 ms a
            # step before the window, 30-32 after; detached, at the plain pace). Kineto detaches it when
            # TEARDOWN_CUPTI=1 at the stop; set for that call only (the script's environment is its own again after).
            detach = self.prof_cuda and self._cupti_detach_wanted(why)
            if detach:
                os.environ["TEARDOWN_CUPTI"] = "1"
            try:
                results = torch.autograd._disable_profiler()
            finally:
                if detach:
                    del os.environ["TEARDOWN_CUPTI"]
            if detach:
                # Kineto finalises CUPTI in its callback on the next CUDA runtime call: made here, so that no profiler
                # the script starts right after ours meets a teardown still pending (it then records no GPU event).
                torch.cuda.synchronize()
            stop_hook = getattr(torch.autograd.profiler, "_run_on_profiler_stop", None)
            if stop_hook is not None:
                stop_hook()
        self.own_profiler = None
        stop_s = time.perf_counter() - stop_t0  # the training thread's share of the window's end (the events collected)
        # A time window has no steps, and files of its own: a step window may still come after it.
        suffix = "-time" if timed else ""
        if timed:
            self.time_state = "done"
            fields = {"firstStep": None, "lastStep": None, "reason": "time", "durationS": profiled_s}
        else:
            self.window_done = True
            fields = {"firstStep": self.prof_first_step, "lastStep": self.step}
        fields["stopS"] = stop_s
        if self.prof_cuda:
            # The script's own TEARDOWN_CUPTI=1 detaches it too (Kineto reads it at every stop).
            fields["cuptiDetached"] = detach or (not self._is_legacy(prof) and os.environ.get("TEARDOWN_CUPTI") == "1")
        run_dir = self.cfg.run_dir
        trace = os.path.join(run_dir, "trace-%s%s.json" % (self.tag, suffix)) if run_dir and why != "error" else None
        snapshot = None
        device = None
        if self.gpu.history_on and run_dir:
            snapshot = os.path.join(run_dir, "snapshot-%s%s.pickle" % (self.tag, suffix))
            device = torch.cuda.current_device()
        keep_history = self.cfg.memory_history_always
        probe = self

        def export():
            # Timed: the background run holds the GIL through torch's C++ writers, so this is time the training
            # thread may have waited too (its steps meanwhile are marked as the probe's work).
            t0 = time.perf_counter()
            with _quiet_encoding():
                fields["trace"], trace_error = _written(trace, probe._export_trace, prof, results, trace)
            t1 = time.perf_counter()
            fields["snapshot"], snapshot_error = _written(snapshot, probe._export_snapshot, snapshot, device, keep_history)
            fields["exportS"] = {"trace": t1 - t0, "snapshot": time.perf_counter() - t1 if snapshot else 0.0}
            if trace_error:
                fields["traceError"] = trace_error
            if snapshot_error:
                fields["snapshotError"] = snapshot_error
            probe._queue("profile-end", fields)

        self.background.ensure()
        self.background.submit("export", export)
        self.mark_next_step("window-end")

    def _cupti_detach_wanted(self, why):
        """Whether the window's stop also detaches CUPTI from the process. Not when a profiler of the script's takes
        over from ours (a teardown then races with its start: it recorded no GPU event on an H100), nor where the
        script or torch chose for itself (TEARDOWN_CUPTI set: torch sets 0 where inductor captures CUDA graphs), nor
        with a CUDA before 12.6, where re-attaching after a teardown could crash under CUDA graphs."""
        if why not in ("steps", "time") or "TEARDOWN_CUPTI" in os.environ:
            return False
        try:
            major, minor = (int(x) for x in str(self.torch.version.cuda).split(".")[:2])
        except (TypeError, ValueError):
            return False
        return (major, minor) >= (12, 6)

    def _export_trace(self, prof, results, path):
        """In a background run: the trace of a stopped profiler written to `path` (the path, or None)."""
        torch = self.torch
        from torch.autograd.profiler_util import EventList

        if self._is_legacy(prof):
            # The legacy parser asserts that every range a thread ends was started on that thread in the window; a
            # range started before the window (the optimizer step's, around the hook that opened it) or on another
            # thread (DDP's communication) ends without its start: those ends are dropped first. Should the parse
            # still fail, that is no error of the probe's: the window has no trace, and the record says why.
            try:
                parsed = torch.autograd.profiler_legacy._parse_legacy_records(_matched_ranges(results))
            except Exception as e:
                return TraceUnavailable("torch's legacy profiler could not parse its own records: %s" % str(e)[:300])
            EventList(parsed).export_chrome_trace(path)  # no keywords: their names changed across versions
            return path
        if torch.autograd.kineto_available():
            results.save(path)
            return path
        # A torch without Kineto (Debian's CPU build): the legacy JSON, from the events parsed here.
        parsed = prof._parse_kineto_results(results)
        events = EventList(parsed, use_cuda=getattr(prof, "use_cuda", False), profile_memory=getattr(prof, "profile_memory", False), with_flops=getattr(prof, "with_flops", False))
        events.export_chrome_trace(path)
        return path

    def _export_snapshot(self, path, device, keep_history):
        """In a background run: the allocator's snapshot (segments, blocks and the window's history) pickled to
        `path`; the history recording stops after it unless it runs for the whole process."""
        torch = self.torch
        with torch.cuda.device(device):
            s = self.gpu.snapshot()
            if not keep_history:
                self.gpu.stop_history()
        with open(path, "wb") as f:
            pickle.dump(s, f)
        return path

    def _window_overdue(self, now):
        """A step window without a step end for its limit: the loop has left it (its end, an evaluation)."""
        if self.prof is None or self.window_kind != "steps":
            return False
        last = self.last_boundary if self.last_boundary is not None else self.window_opened_at
        times = self.host_step_times
        limit = max(WINDOW_LIMIT_MIN_S, WINDOW_LIMIT_STEPS * median(times)) if times else WINDOW_LIMIT_MIN_S
        return now - max(last, self.window_opened_at) > limit

    def _close_if_overdue(self, now):
        """From a hook on the stepping thread."""
        if self._window_overdue(now):
            self._stop_profiler("time")

    # ---------- the script's own profilers ----------

    def _on_user_profiler(self, prof):
        """The script prepares a profiler: ours stops first (on its thread), and opens no more while that one runs."""
        # By id, with a weak reference: a WeakSet would hash the profiler (a subclass's __hash__ is the script's).
        key, profilers = id(prof), self.user_profilers
        try:
            profilers[key] = weakref.ref(prof, lambda r: profilers.pop(key, None) if profilers.get(key) is r else None)
        except TypeError:
            pass
        if self.prof is not None:
            self._stop_profiler("user-profiler")

    # ---------- timers, from the background runs ----------

    def _window_timers(self, now):
        """The time window's start and end, and a step window's time limit, carried out on the main thread."""
        if self.prof is not None and self.window_kind == "steps":
            if self._window_overdue(now) and self.window_thread == self.main_ident:
                self.main_call.request(self._on_main_tick)
            return
        if self.time_armed_at is None or self.time_state == "done":
            return
        cfg = self.cfg
        if self.time_state is None:
            if self.step > 0 or self.prof is not None:
                self.time_state = "done"  # steps were found: the step window does the work
                return
            quiet_since = max(self.time_armed_at, self.last_activity or 0.0)
            if now - quiet_since < cfg.time_after_s:
                return
        elif now - self.window_opened_at < cfg.time_window_s:
            return
        self.main_call.request(self._on_main_tick)

    def _on_main_tick(self, frame):
        """On the main thread, between two bytecodes of whatever it runs (see mainthread.py)."""
        if self.disabled or in_probe(frame):
            return  # never in the middle of the probe's own code: the next tick asks again
        self._guarded(self._main_tick)

    def _main_tick(self):
        now = time.perf_counter()
        if self.prof is not None:
            if self.window_kind == "time" and now - self.window_opened_at >= self.cfg.time_window_s:
                self._stop_profiler("time")
            elif self.window_kind == "steps" and self._window_overdue(now):
                self._stop_profiler("time")
            return
        if self.time_state is None and self.step == 0 and self.time_armed_at is not None:
            self._start_time_window()

    def _arm_time_window(self):
        """The time window becomes possible once the process has device work (CUDA initialised)."""
        cfg = self.cfg
        if self.time_armed_at is not None or cfg.time_after_s <= 0 or cfg.time_window_s <= 0 or cfg.profile_steps <= 0 or not cfg.run_dir:
            return
        if not self.main_call.available():
            return
        self.time_armed_at = time.perf_counter()
        self.background.ensure()

    def _start_time_window(self):
        if not self._profiler_free():
            self.time_state = "done"  # the script profiles itself: its profiler stays, no window of ours
            return
        quiet_s = time.perf_counter() - max(self.time_armed_at, self.last_activity or 0.0)
        cuda_on = self.gpu.on()
        if not self._open_profiler(cuda_on):
            self.time_state = "done"
            return
        if cuda_on and not self.gpu.history_on:
            self.gpu.start_history()
        self._announce()
        if self.model_sent is None:
            self._send_model("time")
        self.window_kind = "time"
        self.window_opened_at = time.perf_counter()
        self.time_state = "open"  # after window_opened_at: the background run reads it then
        # No ProfilerStep span: analyze takes a trace without step markers as one step.
        self._queue(
            "profile-start",
            {"step": None, "steps": 0, "cuda": cuda_on, "reason": "time", "durationS": self.cfg.time_window_s, "quietS": quiet_s, "aligned": False},
        )
