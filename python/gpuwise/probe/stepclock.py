"""Where the current step started: its wall clock (perf_counter) and the stepping thread's CPU time (thread_time).

The thread's CPU clock is a system call, and in a real loop on the 2-core VM one read cost about 18 us of the step (the
call and the caches it leaves cold: +36 us a step of 72 with a read at every boundary, +14 without), so after the first
CPU_EVERY_STEP steps it is read around one step in CPU_SAMPLE_EVERY: that step's record has `hostCpuS`, the others null
(a median over a steady loop's samples is the same). A DataLoader queue wait or a GIL wait sleeps and does not count; a
spin-waiting CUDA sync does.
"""
import time

# The host's CPU time is measured for every one of the first CPU_EVERY_STEP steps, then for one step in CPU_SAMPLE_EVERY.
CPU_EVERY_STEP = 64
CPU_SAMPLE_EVERY = 16

_thread_time = time.thread_time
_perf_counter = time.perf_counter


def cpu_read_at(step):
    """Whether the CPU clock is read at the end of step `step`: the boundaries that start and end a sampled step."""
    return step < CPU_EVERY_STEP or (step + 1) % CPU_SAMPLE_EVERY < 2


class StepClock(object):
    def __init__(self):
        self.last_boundary = None  # perf_counter() at the end of the previous step
        self.last_cpu = None  # the CPU time there, on `cpu_thread` (only a delta on one thread is its CPU time)
        self.cpu_thread = None

    def start(self, now, ident):
        """The clock starts at `now` on thread `ident` (the loop's first step, or a source that takes over)."""
        self.last_boundary = now
        self.last_cpu = _thread_time()
        self.cpu_thread = ident

    def resume(self, now, ident):
        """A step recorded in full after counted ones: no CPU time for it (its start was not read)."""
        self.last_boundary = now
        self.last_cpu = None
        self.cpu_thread = ident

    def lap(self, now, step, ident):
        """Step `step` ends at `now` on thread `ident`: (its wall time, its CPU time, the CPU clock read or None)."""
        last = self.last_boundary
        step_time = None if last is None else now - last
        cpu = _thread_time() if cpu_read_at(step) else None
        host_cpu = None if cpu is None or self.last_cpu is None or self.cpu_thread != ident else max(0.0, cpu - self.last_cpu)
        return step_time, host_cpu, cpu

    def restart(self, now, cpu, ident):
        """The next step runs from `now` (its CPU from `cpu`, when read)."""
        self.last_boundary = now
        self.last_cpu = cpu
        self.cpu_thread = ident

    def skip_probe_work(self, cpu_read):
        """The probe's own work at the boundary is not part of the next step: both clocks read again (the CPU's only
        when it was read at the boundary)."""
        self.last_boundary = _perf_counter()
        if cpu_read:
            self.last_cpu = _thread_time()
