"""The profiler window: where it opens (steady state, a fixed step, rank 0's plan), its steps, its end, and the time
window of a run without steps."""
import os
import threading
import time

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
# The time window's trigger: a Python handler for this signal, triggered on the main thread without sending it.
_TIME_WINDOW_SIGNAL = "SIGRTMAX"
# Every module of the probe: the time window never interrupts one of them.
_PACKAGE = __name__.rsplit(".", 1)[0] + "."


class WindowMixin(object):
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
            if (f.f_globals.get("__name__") or "").startswith(_PACKAGE):
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


def _interrupt_main(sig):
    """Runs the Python handler of `sig` on the main thread at its next bytecode, without sending a signal (3.10+);
    older Pythons get the signal itself, restarting system calls (siginterrupt False)."""
    import _thread

    try:
        _thread.interrupt_main(sig)
    except TypeError:
        import signal

        signal.pthread_kill(threading.main_thread().ident, sig)


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


def _median(xs):
    ys = sorted(xs)
    n = len(ys)
    return 0.0 if n == 0 else (ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2]))
