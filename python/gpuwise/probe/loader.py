"""The DataLoaders the process iterates, and what their workers cost: the `loader` record.

Nothing runs in the workers: each iterator is seen when `DataLoader.__iter__` returns it (patches.py), its settings
and worker pids are read from its attributes, its batches are counted as `__next__` returns them, and the background
thread reads, about once a second, the CPU time of its worker processes from /proc (user + system, all threads); a
worker that ended since (each epoch's, unless persistent) is counted from the CPU of the reaped children
(`os.times()`), which the DataLoader's join adds to the process.
The CPU a batch costs in the workers, the cores the process may use and its own CPU time are what doctor's pace
model needs to say how many workers a demand takes, and where the cores run out.
"""
import os
import threading
import weakref

from . import safe
from .watchdog import median

# The background runs read the loaders at most this often.
READ_EVERY_S = 1.0
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in getattr(os, "sysconf_names", {}) else 100


def cpu_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def stat_cpu(path):
    """(kernel name, user + system CPU seconds) from a /proc `stat` file (a process's or a thread's); None where it
    cannot be read (the process or thread has ended)."""
    try:
        with open(path, "rb") as f:
            s = f.read()
        close = s.rindex(b")")
        fields = s[close + 2 :].split()
        return s[s.index(b"(") + 1 : close], (int(fields[11]) + int(fields[12])) / float(_TICKS)
    except (OSError, ValueError, IndexError):
        return None


def process_cpu_s(pid):
    """User + system CPU seconds of process `pid` (all its threads) from /proc; None where it cannot be read."""
    got = stat_cpu("/proc/%d/stat" % pid)
    return got[1] if got is not None else None


class _Loader(object):
    def __init__(self, index):
        self.index = index
        self.epoch = 0
        self.epoch_start_step = 0
        self.iterator_id = None  # id() of the current iterator (no reference is kept)
        self.batches = 0  # batches its iterators returned, all epochs
        # Batches returned between two bursts of the sampled loop, read off the iterator's own count by the stepping
        # thread (sampling.py): added to `batches` when the burst starts, reported with it meanwhile.
        self.batches_pending = 0
        self.worker_cpu = {}  # pid -> CPU seconds when last read
        self.worker_cpu_s = 0.0  # the workers' CPU so far (the sum of what each read added)
        self.settings = {}
        self.iter_at = None  # perf_counter() when iter(loader) was called, until the epoch's first batch
        self.fills = []  # each later epoch's wait for its first batch (s)


class LoaderWatch(object):
    def __init__(self):
        # id(DataLoader) -> (weak reference, _Loader), looked up on the iterating thread only. By id: a weak-keyed
        # dict would hash and compare the loaders (a subclass's __hash__ and __eq__ are the script's code).
        self.loaders = {}
        self.states = []  # every _Loader, in order (its index): what the background runs read
        self.by_iterator = {}  # id(iterator) -> _Loader, for the iterators of this epoch
        self.read_at = None
        self.children_cpu = None  # os.times()'s CPU of reaped children at the last reading
        self.proc = os.path.exists("/proc/self/stat")
        self.reading = threading.Lock()

    def after_fork(self):
        """In a forked child: the parent's loaders and the lock a reading may have held at the fork are not its own."""
        self.__init__()

    def on_iter(self, loader, it, step, t0=None):
        """`loader.__iter__()`, called at perf_counter() `t0`, returned `it` (on the thread that iterates)."""
        got = self.loaders.get(id(loader))
        state = got[1] if got is not None and got[0]() is loader else None
        if state is None:
            state = _Loader(len(self.states))
            self.states.append(state)
            key, loaders = id(loader), self.loaders
            try:
                ref = weakref.ref(loader, lambda r: loaders.pop(key, None) if loaders.get(key, (None,))[0] is r else None)
            except TypeError:
                ref = None  # a loader without weak references: not kept (each epoch counts as a new loader)
            if ref is not None:
                loaders[key] = (ref, state)
        if state.iterator_id is not None and state.iterator_id != id(it):
            self.by_iterator.pop(state.iterator_id, None)  # the epoch before's (its id may be reused once it is gone)
        self.by_iterator[id(it)] = state
        state.iterator_id = id(it)
        state.epoch += 1
        state.epoch_start_step = step
        state.iter_at = t0 if state.epoch > 1 else None  # the first epoch's start also pays the first imports
        if self.children_cpu is None:
            t = os.times()
            self.children_cpu = t[2] + t[3]
        for pid in _worker_pids(it):  # known from the start: a worker gone before the next reading still counts
            state.worker_cpu.setdefault(pid, 0.0)
        # Read off the instances' dicts (safe.py): a DataLoader subclass's properties are the script's code.
        workers = _int_or_none(safe.attr(it, "_num_workers")) or 0
        state.settings = {
            "workers": int(workers),
            "persistentWorkers": safe.attr(loader, "persistent_workers") is True,
            "prefetchFactor": _int_or_none(safe.attr(loader, "prefetch_factor")) if workers else None,
            "pinMemory": safe.attr(loader, "pin_memory") is True,
            "batchSize": _int_or_none(safe.attr(loader, "batch_size")),
        }

    def state_of(self, it):
        """The loader whose iterator `it` is (None when its `__iter__` was not seen)."""
        return self.by_iterator.get(id(it))

    def on_batch(self, it, at=None):
        """`it.__next__()` returned a batch at perf_counter() `at` (the thread that iterates; one dict lookup)."""
        state = self.by_iterator.get(id(it))
        if state is not None:
            state.batches += 1
            if state.iter_at is not None and at is not None:
                state.fills.append(at - state.iter_at)
                state.iter_at = None

    def records(self, now, step, force=False):
        """The `loader` records due now: [] until READ_EVERY_S has passed (`force`: the reading at the end). The
        background run and the end (on the main thread) may both read: one at a time, the other gets []."""
        if not force and self.read_at is not None and now - self.read_at < READ_EVERY_S:
            return []
        if not self.reading.acquire(force, 1.0 if force else -1):
            return []
        try:
            self.read_at = now
            return self._read(step)
        finally:
            self.reading.release()

    def _read(self, step):
        states = list(self.states)  # not the WeakKeyDictionary: a key taken here could be a loader's last reference
        own = os.times()
        children = own[2] + own[3]
        reaped = children - self.children_cpu if self.children_cpu is not None else 0.0
        self.children_cpu = children
        # Workers read alive before and gone now: their CPU since the last reading is in the reaped children's time.
        dead = {}
        for state in states:
            # The pids were read at __iter__ on the iterating thread: the iterator is never touched here (a reference
            # taken on this thread could make its __del__, which shuts the workers down, run on this thread).
            for pid, before in list(state.worker_cpu.items()):
                cpu = process_cpu_s(pid)
                if cpu is None:
                    state.worker_cpu.pop(pid, None)
                    dead.setdefault(state, []).append(before)
                elif cpu >= before:
                    state.worker_cpu_s += cpu - before
                    state.worker_cpu[pid] = cpu
        n_dead = sum(len(v) for v in dead.values())
        if n_dead:
            tail = max(0.0, reaped - sum(sum(v) for v in dead.values()))
            for state, befores in dead.items():
                state.worker_cpu_s += tail * len(befores) / n_dead
        cores = cpu_cores()
        out = []
        for state in states:
            fields = {
                "step": step,
                "loader": state.index,
                "epoch": state.epoch,
                "epochStartStep": state.epoch_start_step,
                "cpuCores": cores,
                "batches": state.batches + state.batches_pending,
                "workerCpuS": state.worker_cpu_s if self.proc and state.settings.get("workers") else None,
                "processCpuS": own[0] + own[1],
                "epochFillS": median(state.fills) if state.fills else None,
            }
            fields.update(state.settings)
            out.append(fields)
        return out


def _worker_pids(it):
    """The worker processes' pids, from each multiprocessing Process's `_popen` (what its `pid` property reads)."""
    pids = []
    for w in safe.head(safe.attr(it, "_workers"), 1024) if it is not None else []:
        pid = safe.attr(safe.attr(w, "_popen"), "pid")
        if type(pid) is int:
            pids.append(pid)
    return pids


def _int_or_none(x):
    return x if type(x) is int else None
