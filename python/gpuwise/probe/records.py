"""The records the probe sends (the wire format is src/run/records.ts) and their sending.

A hook only builds its record and queues it (`Sender.put`): the JSON and the socket write happen on the probe's
background thread, in batches (whatever was queued when it got to run), so a step costs the training thread a few
microseconds. Records that may be the last of the process (an exception, the end, an out-of-memory error, the
probe's own error) are written at once by the thread that makes them (`Sender.put(..., now=True)`).
"""
import collections
import json
import os
import threading
import time

from .. import PROTOCOL_VERSION

# Queued records past this many are written by the thread that queues them (the background thread is stuck).
MAX_QUEUED = 100000


def record(kind, rank, fields):
    rec = {"v": PROTOCOL_VERSION, "type": kind, "pid": os.getpid(), "rank": rank, "t": time.time()}
    rec.update(fields)
    return rec


def _num(x):
    return "null" if x is None else repr(x)


def _step_line(r):
    """A step record's JSON line, the fields in their usual order (as json.dumps writes it, several times faster)."""
    gpu = r["gpuStepTimes"]
    gpu_text = "[" + ",".join("[%d,%r]" % (s, v) for s, v in gpu) + "]" if gpu else "[]"
    memory = r["memory"]
    memory_text = "null" if memory is None else json.dumps(memory, separators=(",", ":"))
    work = r.get("probeWork")
    return (
        '{"v":%d,"type":"step","pid":%d,"rank":%s,"t":%r,"gpuStepTimes":%s,"step":%d,"stepTimeS":%s,"hostCpuS":%s,'
        '"dataWaitS":%r,"batches":%d,"samples":%s,"tokens":%s,"seqLen":%s,"batchSource":%s,"stepSource":"%s",'
        '"memory":%s,"profiled":%s,"probeWork":%s}\n'
        % (
            r["v"],
            r["pid"],
            _num(r["rank"]),
            r["t"],
            gpu_text,
            r["step"],
            _num(r["stepTimeS"]),
            _num(r["hostCpuS"]),
            r["dataWaitS"],
            r["batches"],
            _num(r["samples"]),
            _num(r["tokens"]),
            _num(r["seqLen"]),
            "null" if r["batchSource"] is None else '"%s"' % r["batchSource"],
            r["stepSource"],
            memory_text,
            "true" if r["profiled"] else "false",
            "null" if work is None else '"%s"' % work,
        )
    )


def line_of(rec):
    if rec["type"] == "step":
        return _step_line(rec)
    return json.dumps(rec, separators=(",", ":"), default=str) + "\n"


class Sender(object):
    """The queue between the hooks and the sink (transport.Sink): `put` from any thread, `flush` writes the batch."""

    def __init__(self, sink, wake=None):
        self.sink = sink
        self.queue = collections.deque()
        self.wake = wake  # called when the queue was empty (the background thread writes what comes)
        self.lock = threading.Lock()  # one writer at a time: the background thread, or an urgent record's thread
        self.sent = 0

    def put(self, rec, now=False):
        q = self.queue
        was_empty = not q
        q.append(rec)
        if now or len(q) > MAX_QUEUED:
            self.flush()
        elif was_empty and self.wake is not None:
            self.wake()

    def flush(self, wait_s=None):
        """Writes every queued record, in order, as one batch; returns False when the lock was not free in `wait_s`."""
        if not self.lock.acquire(timeout=-1 if wait_s is None else wait_s):
            return False
        try:
            q = self.queue
            lines = []
            while q:
                lines.append(line_of(q.popleft()))
            if lines:
                self.sink.write("".join(lines))
                self.sent += len(lines)
            return True
        finally:
            self.lock.release()

    def after_fork(self):
        """In a forked child: the parent's queue and lock are not this process's."""
        self.queue = collections.deque()
        self.lock = threading.Lock()
