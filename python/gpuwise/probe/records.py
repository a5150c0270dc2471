"""The records the probe sends (the wire format is src/run/records.ts) and their sending.

A hook builds its record and queues it (`Sender.put`). The queue is written as one batch (one JSON line per record,
a step record's formatted without `json`, one socket write) at most every FLUSH_S by the thread that queues, never
waiting, and no more often than keeps the writes within FLUSH_COST_SHARE of its time (MAX_FLUSH_S at most): what the
socket does not take at once is left to the probe's background work (background.py), which also writes what waits
longer (a loop that stopped). A step longer than the interval is thus written when it ends: a process killed later (SIGKILL, the OOM
killer) lost none of its steps; a faster loop loses at most its last interval of them, and its step counter
(beacon.py) still says how far it got. Records that
may be the last of the process (an exception, the end, an out-of-memory error, the probe's own error) are written
at once (`put(..., now=True)`). Measured on the shared 2-core VM: a background thread woken for each record cost the
training thread more (the hand-over of the GIL to it, 100-150 us a step under load) than writing the batch itself.
"""
import collections
import json
import os
import threading
import time

_perf_counter = time.perf_counter

from .. import PROTOCOL_VERSION

# Queued records past this many are written by the thread that queues them, waiting (the background work is stuck).
MAX_QUEUED = 100000
# The queue is written at most this often by the thread that queues...
FLUSH_S = 0.002
# ...and no more often than keeps the writes within this share of that thread's time: a write costs what the machine's
# system calls cost (on the shared 2-core VM about 60 us to a file: the lines formatted, the descriptor's identity
# checked, the write), which every 2 ms was 3% of a 1 ms loop. The interval follows the writes' measured cost, up to
# MAX_FLUSH_S; a process killed by SIGKILL loses that much of its records, not its step count (beacon.py). At 1% the
# writes were a third to a half of the probe's whole cost at 1 ms steps; at 0.3% (capped by MAX_FLUSH_S) a ~3 ms loop
# on the VM spent 0.66% of its time writing, against 0.99% (118-136 us a write, every 10.5 then 20 ms).
FLUSH_COST_SHARE = 0.003
MAX_FLUSH_S = 0.02


def record(kind, rank, fields):
    rec = {"v": PROTOCOL_VERSION, "type": kind, "pid": os.getpid(), "rank": rank, "t": time.time()}
    rec.update(fields)
    return rec


# A step record's JSON line: the fields in their usual order, durations to 9 significant digits (a nanosecond at a
# second), `t` to the microsecond; written with one format instead of json.dumps (3x faster: a record costs about
# 1 us of the training thread's CPU on the 2-core VM).
_STEP_LINE = (
    '{"v":%d,"type":"step","pid":%d,"rank":%s,"t":%.6f,"gpuStepTimes":%s,"step":%d,"stepTimeS":%s,"hostCpuS":%s,'
    '"dataWaitS":%.9g,"batches":%d,"forwards":%s,"samples":%s,"tokens":%s,"seqLen":%s,"batchSource":%s,'
    '"stepSource":"%s","memory":%s,"profiled":%s,"probeWork":%s,"backwardS":%s}\n'
)


def _step_line(row):
    """A step record, queued as a tuple in the order of _STEP_LINE (steps.py, `Steps.end_step`): no dict is built on the
    training thread."""
    v, pid, rank, t, gpu, step, step_time, host_cpu, wait, batches, forwards, samples, tokens, seq_len, batch_source, source, memory, profiled, work, backward = row
    return _STEP_LINE % (
        v,
        pid,
        "null" if rank is None else "%d" % rank,
        t,
        "[" + ",".join("[%d,%.9g]" % (at, dur) for at, dur in gpu) + "]" if gpu else "[]",
        step,
        "null" if step_time is None else "%.9g" % step_time,
        "null" if host_cpu is None else "%.9g" % host_cpu,
        wait,
        batches,
        "null" if forwards is None else "%d" % forwards,
        "null" if samples is None else "%d" % samples,
        "null" if tokens is None else "%d" % tokens,
        "null" if seq_len is None else "%d" % seq_len,
        "null" if batch_source is None else '"%s"' % batch_source,
        source,
        "null" if memory is None else json.dumps(memory, separators=(",", ":")),
        "true" if profiled else "false",
        "null" if work is None else '"%s"' % work,
        "null" if backward is None else "%.9g" % backward,
    )


def line_of(rec):
    if type(rec) is tuple:
        return _step_line(rec)
    return json.dumps(rec, separators=(",", ":"), default=str) + "\n"


class Sender(object):
    """The queue between the hooks and the sink (transport.Sink): `put` from any thread, `flush` writes the batch."""

    def __init__(self, sink, wake=None, rank=None):
        self.sink = sink
        self.rank = rank  # the process's rank in a distributed run, on every record
        self.queue = collections.deque()
        self.wake = wake  # asks the background work to write what the socket did not take
        self.lock = threading.Lock()  # one writer at a time
        self.unsent = b""  # the bytes of a batch the socket did not take at once (written first, in order)
        self.flushed_at = 0.0
        self.flush_every_s = FLUSH_S  # FLUSH_S, or longer where a write costs more than FLUSH_COST_SHARE of it
        self.sent = 0

    def put(self, rec, now=False):
        """Queues a record (a dict, or a step row: see _step_line); True when this call wrote the queue."""
        q = self.queue
        q.append(rec)
        if now or len(q) > MAX_QUEUED:
            return self.flush()
        if _perf_counter() - self.flushed_at >= self.flush_every_s:
            return self.flush(block=False)
        return False

    def put_record(self, kind, fields, now=False):
        """Queues a record of `kind` with `fields` (`now`: written at once, as a record that may be the last)."""
        return self.put(record(kind, self.rank, fields), now=now)

    def flush(self, wait_s=None, block=True):
        """Writes every queued record, in order, as one batch. `block=False`: never waits, neither for the lock nor for
        the socket (the rest goes to the background work). False when the lock was not free."""
        if not self.lock.acquire(True if block and wait_s is None else block, -1 if wait_s is None or not block else wait_s):
            return False
        try:
            self.flushed_at = _perf_counter()
            q = self.queue
            lines = []
            while q:
                lines.append(line_of(q.popleft()))
            if not lines and not self.unsent:
                return True
            self.sent += len(lines)
            data = self.unsent + "".join(lines).encode("utf-8")
            self.unsent = self.sink.write(data, block)
            if self.unsent and self.wake is not None:
                self.wake()
            # The next write no sooner than this one's cost allows, as a moving average (one preempted write is no
            # trend). The lines' formatting is in the cost: it grows with the interval, but by less than the interval
            # (a step line is about 5 us on the VM, under 1% of a 1 ms step), so the interval settles.
            cost_s = _perf_counter() - self.flushed_at
            due = min(MAX_FLUSH_S, max(FLUSH_S, cost_s / FLUSH_COST_SHARE))
            self.flush_every_s += 0.25 * (due - self.flush_every_s)
            return True
        finally:
            self.lock.release()

    def after_fork(self):
        """In a forked child: the parent's queue, lock and bytes are not this process's, nor its connection."""
        self.queue = collections.deque()
        self.lock = threading.Lock()
        self.unsent = b""
        self.sink.after_fork()
