"""The probe's one background thread: it writes the queued records, runs the slow jobs (a profiler trace's export, a
memory snapshot), and ticks the watchdog and the profiler window's timers.

It is started with `_thread` rather than `threading`, so the script's `threading.enumerate()`,
`threading.active_count()` and thread names are its own (faulthandler and `sys._current_frames()` still list it).
It never raises: an error in one of its tasks is the probe's error (reported once, fail-open).
"""
import _thread
import collections
import os
import time

from .threads import native_id

# How often the thread wakes when nothing asks it to: timers (watchdog, window limits) are checked then.
TICK_S = 0.25


class Background(object):
    def __init__(self, probe):
        self.probe = probe
        self.pid = None
        self.stopped = False
        self.jobs = collections.deque()  # (name, callable), run in order
        self.busy = None  # the job running now, by name (steps it overlaps carry it as `probeWork`)
        self.jobs_done = 0
        self.idle = _thread.allocate_lock()  # held while a job runs: `wait_jobs` waits on it
        self.wake_lock = _thread.allocate_lock()
        self.wake_lock.acquire()

    def ensure(self):
        """Starts the thread in this process (a forked child starts its own)."""
        if self.pid == os.getpid() or self.stopped:
            return
        self.pid = os.getpid()
        self.idle = _thread.allocate_lock()
        self.wake_lock = _thread.allocate_lock()
        self.wake_lock.acquire()
        _thread.start_new_thread(self._run, ())

    def wake(self):
        """From any thread: the background thread runs its tasks now (a binary semaphore: never blocks)."""
        try:
            self.wake_lock.release()
        except RuntimeError:
            pass  # already released: the thread will see the new work anyway

    def submit(self, name, job):
        self.jobs.append((name, job))
        self.wake()

    def pending(self):
        return self.busy is not None or bool(self.jobs)

    def wait_jobs(self, timeout_s):
        """Waits (at most `timeout_s`) for the queued jobs to finish: at exit, so a trace being written is complete."""
        until = time.perf_counter() + timeout_s
        while self.pending() and self.pid == os.getpid() and time.perf_counter() < until:
            if self.idle.acquire(timeout=0.05):
                self.idle.release()
            if self.jobs and self.busy is None:
                self.wake()

    def stop(self):
        self.stopped = True
        self.wake()

    def _run(self):
        probe = self.probe
        probe.thread_cpu.probe_tid = native_id()
        while not self.stopped:
            self.wake_lock.acquire(timeout=probe.tick_s())
            if self.stopped or self.pid != os.getpid():
                return
            while self.jobs:
                with self.idle:
                    name, job = self.jobs[0]
                    self.busy = name  # before it leaves the queue: `pending()` never sees it neither queued nor running
                    self.jobs.popleft()
                    try:
                        probe._guarded(job)
                    finally:
                        self.busy = None
                        self.jobs_done += 1
            try:
                probe._background_tick()
            except Exception as e:  # the probe's error (fail-open: one line, the probe off), not a thread's traceback
                probe._fail(e)
