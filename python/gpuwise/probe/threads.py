"""The training process's CPU time by thread: the `cpu` record.

The stepping thread's own CPU time (each step record's `hostCpuS`) is not all the host does for a step. On CUDA,
`loss.backward()` runs on autograd's device thread (named `pt_autograd_<device>`) while the stepping thread waits:
the backward's launches are host work in series with the thread's, which its clock never sees. The pin-memory
thread and others run beside it. The probe's background runs read, about once a second, every thread's CPU time from
/proc/self/task (user + system) and sums it by role; doctor's pace model takes the stepping thread's and autograd's
together as the host's work a step (src/pace/run.ts).

Nothing is called in torch: threads are told apart by their kernel name (autograd's) and their native id (the
stepping thread's, taken where it steps). The probe's own background work runs on a thread made for each run
(ticker.py), whose CPU would leave /proc with it: each run adds its own (`add_probe_cpu`).
"""
import os
import threading

from .loader import READ_EVERY_S, stat_cpu

_TASKS = "/proc/self/task"
AUTOGRAD_PREFIX = b"pt_autograd"
ROLES = ("stepping", "autograd", "probe", "other")

_native_id = getattr(threading, "get_native_id", None)


def native_id():
    """The calling thread's kernel id (None before Python 3.8)."""
    return _native_id() if _native_id is not None else None


class ThreadCpuWatch(object):
    def __init__(self):
        self.available = os.path.isdir(_TASKS)
        self.stepping_tid = None  # set on the stepping thread (steps.py)
        self.probe_tid = None  # the thread of the probe's background run in progress (its CPU is added by the run)
        self.last = {}  # tid -> CPU seconds at the last reading
        self.totals = dict.fromkeys(ROLES, 0.0)  # CPU seconds by role since the first reading
        self.read_at = None
        self.reading = threading.Lock()

    def after_fork(self):
        """In a forked child: its threads are not the parent's."""
        self.__init__()

    def add_probe_cpu(self, cpu_s):
        """A background run's own CPU time (from the first reading on, as the threads')."""
        if self.last:
            self.totals["probe"] += cpu_s

    def records(self, now, step, force=False):
        """The `cpu` record due now, as a list ([] until READ_EVERY_S has passed; `force`: the reading at the end)."""
        if not self.available or (not force and self.read_at is not None and now - self.read_at < READ_EVERY_S):
            return []
        if not self.reading.acquire(force, 1.0 if force else -1):
            return []
        try:
            self.read_at = now
            return [self._read(step)]
        finally:
            self.reading.release()

    def _read(self, step):
        try:
            tids = [int(t) for t in os.listdir(_TASKS)]
        except (OSError, ValueError):
            tids = []
        first = not self.last
        seen = {}
        totals = self.totals
        for tid in tids:
            got = stat_cpu("%s/%d/stat" % (_TASKS, tid))
            if got is None:
                continue  # ended between the listing and the read
            name, cpu = got
            seen[tid] = cpu
            if first:
                continue  # the first reading sets the baselines: what came before the steps is not theirs
            before = self.last.get(tid, 0.0)  # a thread started since: all its CPU is since the last reading
            if cpu <= before:
                continue
            if tid == self.probe_tid:
                continue
            if tid == self.stepping_tid:
                role = "stepping"
            elif name.startswith(AUTOGRAD_PREFIX):
                role = "autograd"
            else:
                role = "other"
            totals[role] += cpu - before
        self.last = seen
        own = os.times()  # as the loader record reads it
        return {
            "step": step,
            "threads": len(seen),
            "processCpuS": own[0] + own[1],
            "steppingCpuS": totals["stepping"],
            "autogradCpuS": totals["autograd"],
            "probeCpuS": totals["probe"],
            "otherCpuS": totals["other"],
        }
