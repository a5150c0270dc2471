"""CUDA: step timing events, allocator statistics, allocation history and the out-of-memory snapshot."""
import threading

_get_ident = threading.get_ident

# Allocator statistics are read at a step's end at most this often (a C call that builds a nested dict): every step
# of a run whose steps are longer, and the peaks (cumulative) stay exact at the last step read.
MEMORY_EVERY_S = 0.1
# Timing events kept for reuse, and the most pending before the GPU is taken to be stuck.
EVENT_POOL = 8
MAX_PENDING_EVENTS = 4096
# The Stream objects the step events were recorded on, by the current stream's identity: `Event.record()` without a
# stream builds one through `torch.cuda.current_stream()` at each call, 5.3 of the 19.7 us a step the event work cost
# on an H200 host (Python 3.12, torch 2.11; bench/doctor/probe_breakdown.py). A script that makes new streams as it
# goes gets them built again past this many.
STREAMS_KEPT = 16


class Gpu(object):
    """One process's CUDA side; every call returns quietly when CUDA is not initialised."""

    def __init__(self, torch, timing=True, stacks="python"):
        self.torch = torch
        self.timing = timing  # off: host step times only (GPUWISE_GPU_TIMING=0, or an error, or a graph capture)
        self.stacks = stacks  # the allocation history's stacks: "python" or "all" (GPUWISE_MEMORY_STACKS, config.py)
        self.events = []  # [(step, event)] not yet measured, oldest first
        self.free = []  # events already measured, for reuse
        self.memory_read_at = None
        self.history_on = False
        self.history_thread = None  # the thread that started the recording: the one that stops it
        self.history_stop_pending = False
        raw = getattr(torch._C, "_cuda_memoryStats", None)
        self._raw_stats = raw
        self._initialized = torch.cuda.is_initialized
        # The current stream's identity from two C calls (torch 1.x: its packed handle; 2.x: (id, device, type)), the
        # key of `streams`; None where this torch lacks them (then `Event.record()` finds the stream itself).
        c = torch._C
        current, device = getattr(c, "_cuda_getCurrentStream", None), getattr(c, "_cuda_getDevice", None)
        self._stream_key = (lambda: current(device())) if current is not None and device is not None else None
        self.streams = {}

    def on(self):
        try:
            return bool(self._initialized())
        except Exception:
            return False

    def step_times(self, step, record=True):
        """Records step `step`'s end event (when CUDA is in use) and returns [[step, seconds], ...] for the steps whose
        end event the GPU has reached since the last call. Never blocks."""
        if not self.timing:
            return []
        torch = self.torch
        try:
            if not self._initialized():
                return []
            if record:
                capturing = getattr(torch.cuda, "is_current_stream_capturing", None)
                if capturing is not None and capturing():
                    return []  # inside a CUDA graph capture an event would become part of the graph
                ev = self.free.pop() if self.free else torch.cuda.Event(enable_timing=True)
                ev.record(self._current_stream())
                self.events.append((step, ev))
            done = []
            events = self.events
            while len(events) >= 2 and events[1][1].query():
                (_, a), (s, b) = events[0], events[1]
                if s is not None:  # None: a boundary (mark_boundary), whose time since the event before is no step's
                    done.append([s, a.elapsed_time(b) / 1000.0])
                events.pop(0)
                if len(self.free) < EVENT_POOL:
                    self.free.append(a)
            if len(events) > MAX_PENDING_EVENTS:  # the GPU is stuck: keep memory bounded
                del events[:-2]
            return done
        except Exception:
            # e.g. a stream capture (CUDA graphs) in progress: host timing only, not an error.
            self.timing = False
            self.events = []
            return []

    def mark_boundary(self):
        """An event where the next step starts after steps that were not timed (sampled steps: sampling.py), so that step's
        GPU time runs from here, and the time since the last timed step is nobody's."""
        if not self.timing:
            return
        torch = self.torch
        try:
            if not self._initialized():
                return
            capturing = getattr(torch.cuda, "is_current_stream_capturing", None)
            if capturing is not None and capturing():
                return
            ev = self.free.pop() if self.free else torch.cuda.Event(enable_timing=True)
            ev.record(self._current_stream())
            self.events.append((None, ev))
        except Exception:
            self.timing = False
            self.events = []

    def _current_stream(self):
        """The current stream, as `torch.cuda.current_stream()` gives it, built once per stream (STREAMS_KEPT)."""
        if self._stream_key is None:
            return None
        key = self._stream_key()
        stream = self.streams.get(key)
        if stream is None:
            stream = self.torch.cuda.current_stream()
            if len(self.streams) < STREAMS_KEPT:
                self.streams[key] = stream
        return stream

    def last_step_times(self):
        """At a clean end: waits for the last event once so every step gets its GPU time."""
        if not self.events:
            return []
        try:
            self.events[-1][1].synchronize()
            return self.step_times(None, record=False)
        except Exception:
            return []

    def memory(self, now, force=False):
        """The allocator's figures of the current device, at most every MEMORY_EVERY_S (None in between and without
        CUDA)."""
        if not force and self.memory_read_at is not None and now - self.memory_read_at < MEMORY_EVERY_S:
            return None
        if not self.on():
            return None
        self.memory_read_at = now
        torch = self.torch
        device = torch.cuda.current_device()
        if self._raw_stats is not None:
            # The C call's nested dict: torch.cuda.memory_stats() flattens it in Python, which cost most of the
            # probe's per-step time on an H200 (0.6 ms on a 15 ms step).
            try:
                n = self._raw_stats(device)
                return {
                    "device": device,
                    "allocatedBytes": n["allocated_bytes"]["all"]["current"],
                    "reservedBytes": n["reserved_bytes"]["all"]["current"],
                    "peakAllocatedBytes": n["allocated_bytes"]["all"]["peak"],
                    "peakReservedBytes": n["reserved_bytes"]["all"]["peak"],
                    "allocRetries": n.get("num_alloc_retries"),
                    "ooms": n.get("num_ooms"),
                }
            except Exception:
                pass
        s = torch.cuda.memory_stats()
        return {
            "device": device,
            "allocatedBytes": s.get("allocated_bytes.all.current"),
            "reservedBytes": s.get("reserved_bytes.all.current"),
            "peakAllocatedBytes": s.get("allocated_bytes.all.peak"),
            "peakReservedBytes": s.get("reserved_bytes.all.peak"),
            "allocRetries": s.get("num_alloc_retries"),
            "ooms": s.get("num_ooms"),
        }

    def start_history(self):
        rec = self.torch.cuda.memory._record_memory_history
        try:
            rec(max_entries=100000, stacks=self.stacks)
        except TypeError:  # torch < 2.1
            rec(True)
        self.history_on = True
        self.history_thread = _get_ident()
        self.history_stop_pending = False

    def stop_history(self):
        """Stops the recording now when called on the thread that started it, else at that thread's next
        `stop_history_if_pending()`: torch 2.x registers a thread-local callback with the recording, and removing it
        from another thread prints "Requested callback is not found" on the script's stderr."""
        if _get_ident() != self.history_thread:
            self.history_stop_pending = True
            return
        rec = self.torch.cuda.memory._record_memory_history
        try:
            rec(enabled=None)
        except TypeError:
            rec(False)
        self.history_on = False
        self.history_stop_pending = False

    def stop_history_if_pending(self):
        if self.history_stop_pending and _get_ident() == self.history_thread:
            self.stop_history()

    def snapshot(self):
        """The allocator's state (segments, blocks, the history when recorded), to be pickled off the training thread."""
        return self.torch.cuda.memory._snapshot()

    def announce_fields(self):
        """The `hello` record's `cuda` object."""
        torch = self.torch
        cuda = {"available": None, "initialized": False, "version": getattr(torch.version, "cuda", None), "devices": [], "currentDevice": None}
        # Only a process that initialised CUDA itself is asked about it: `is_available()` initialises the driver (its
        # threads and descriptors: a fork or a closerange() afterwards would meet them), so "available" stays null.
        if self.on():
            cuda["initialized"] = True
            cuda["available"] = True
        if cuda["initialized"]:
            cuda["currentDevice"] = torch.cuda.current_device()
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                cuda["devices"].append({"index": i, "name": p.name, "totalMemoryBytes": p.total_memory, "capability": "%d.%d" % (p.major, p.minor)})
        return cuda
