"""The probe's background work: it writes the queued records the socket did not take, runs the slow jobs (a profiler
trace's export, a memory snapshot), and ticks the watchdog, the periodic readings and the profiler window's timers.

Where none of its duties needs a clock of its own, it runs inline: on the stepping thread at a step's end when
something is due (`run_inline`: the jobs, the readings once a READ_EVERY_S, the records the socket did not take, a
step window past its time limit), and at the exit; the process then holds no thread of the probe's at all. The
duties that do need one are the ones about time passing while the training thread does nothing the probe sees: the
watchdog (a stalled thread cannot report itself), the time window of a run without steps, and a step window left
open by a loop that ended inside it. A timer runs them (ticker.py), started only where the probe's `needs_timer()`
says: a process that uses CUDA or is a rank of a distributed run (what doctor diagnoses hangs in), or one whose time
window is armed; there it does all the work, as before, and between its runs no thread of the probe's is known to
Python. It never raises: an error in one of its tasks is the probe's error (reported once, fail-open).
"""
import _thread
import collections
import os
import time

from .loader import READ_EVERY_S
from .threads import native_id
from .ticker import make_ticker

_thread_time = time.thread_time

# The finest interval between runs, while a window's timers are due (ticks.py's tick_s: otherwise the readings' second,
# or the watchdog's resolution once nothing moves)...
TICK_S = 0.25
# ...and the interval once nothing moves and no watchdog runs (GPUWISE_STALL_S=0): queued records still go out.
IDLE_TICK_S = 5.0


class Background(object):
    def __init__(self, probe):
        self.probe = probe
        self.pid = None
        self.stopped = False
        self.ticker = None
        self.jobs = collections.deque()  # (name, callable), run in order
        self.busy = None  # the job running now, by name (steps it overlaps carry it as `probeWork`)
        self.jobs_done = 0
        self.idle = _thread.allocate_lock()  # held while a job runs: `wait_jobs` waits on it
        self.inline_at = 0.0  # perf_counter() of the next inline run's readings (no timer: run_inline)

    def after_fork(self):
        """In a forked child: the parent's jobs, timer and lock (held, maybe, at the fork) are not this process's."""
        self.__init__(self.probe)

    def ensure(self):
        """Starts the timer's runs in this process where a duty needs them (`probe.needs_timer()`); else the work runs
        inline. A forked child starts its own: timers and threads do not cross a fork."""
        if self.pid == os.getpid() or self.stopped or not self.probe.needs_timer():
            return
        self.pid = os.getpid()
        self.idle = _thread.allocate_lock()
        self.ticker = make_ticker(self._run)  # a timer where libc has one, else the resident thread (ticker.py)
        self.ticker.start(TICK_S)  # the first readings early: they are the baselines of the steps that follow

    def wake(self):
        """From any thread: the work runs now (never blocks)."""
        ticker = self.ticker
        if ticker is not None and self.pid == os.getpid():
            ticker.wake()

    def submit(self, name, job):
        self.jobs.append((name, job))
        self.wake()

    def pending(self):
        return self.busy is not None or bool(self.jobs)

    def timed(self):
        """Whether the timer runs the work in this process (else `run_inline` does)."""
        return self.ticker is not None and self.pid == os.getpid()

    def run_inline(self, now, force=False):
        """Without a timer, on the thread that calls it (the stepping thread at a step's end, the exit): the queued
        jobs, and the tick's work when READ_EVERY_S has passed (`force`: now). True when it did anything."""
        if self.timed() or self.stopped or (not self.jobs and not force and now < self.inline_at):
            return False
        if self.jobs and self.probe.profiler_free():
            self._jobs(self.probe)  # (not while a profiler of the script's records this thread: the exit runs them then)
        if force or now >= self.inline_at:
            self.inline_at = now + READ_EVERY_S
            self.probe.inline_tick(now)
        return True

    def wait_jobs(self, timeout_s):
        """Waits (at most `timeout_s`) for the queued jobs to finish: at exit, so a trace being written is complete.
        Without a timer they run now, on this thread."""
        if not self.timed():
            if not self.stopped:
                self._jobs(self.probe)
            return
        until = time.perf_counter() + timeout_s
        while self.pending() and self.pid == os.getpid() and time.perf_counter() < until:
            if self.idle.acquire(timeout=0.05):
                self.idle.release()
            if self.jobs and self.busy is None:
                self.wake()

    def stop(self):
        """No more runs; returns once none is in progress (the timer's: ticker.py)."""
        self.stopped = True
        ticker = self.ticker
        if ticker is not None and self.pid == os.getpid():
            ticker.stop()

    def _run(self):
        """One run: the queued jobs, then the tick. Returns the seconds until the next run (None: no more)."""
        probe = self.probe
        if self.stopped or self.pid != os.getpid():
            return None
        cpu_at = _thread_time()
        probe.thread_cpu.probe_tid = native_id()
        try:
            return self._work(probe)
        finally:
            probe.thread_cpu.add_probe_cpu(_thread_time() - cpu_at)

    def _work(self, probe):
        self._jobs(probe)
        try:
            probe.background_tick()
        except Exception as e:  # the probe's error (fail-open: one line, the probe off), not a thread's traceback
            probe.fail(e)
        return None if self.stopped else probe.tick_s()

    def _jobs(self, probe):
        while self.jobs:
            with self.idle:
                name, job = self.jobs[0]
                self.busy = name  # before it leaves the queue: `pending()` never sees it neither queued nor running
                self.jobs.popleft()
                try:
                    probe.guarded(job)
                finally:
                    self.busy = None
                    self.jobs_done += 1
