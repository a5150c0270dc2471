"""Seeing a function's calls end without replacing it: `sys.monitoring` (Python >= 3.12).

A wrapper put in place of a function is one frame more in every traceback through it and in every warning's
`stacklevel`, and it is what `inspect`, `__qualname__` and TorchScript find in its place. `sys.monitoring` instead
reports the start and the return of one code object (local events: every other code runs as before, uninstrumented),
so the function stays the script's own object and no frame is added. patches.py uses it where it is available and
falls back to a wrapper (Python < 3.12).

A call that leaves by an exception has no local event (PY_UNWIND is global only): its start is dropped at the next
return on that thread, matched by frame.

`watch_start` reports only a code object's starts, with its frame: model.py sees the outermost module's forward calls
that way in an inference loop, where a global module hook would put every module call of the model on torch's slow
path (measured: +16-40% a forward on a CPU model of 91 small modules).
"""
import sys
import threading
import time

_monitoring = getattr(sys, "monitoring", None)
_get_ident = threading.get_ident
_perf_counter = time.perf_counter
_getframe = sys._getframe
# Tool ids 0-2 and 5 are named (debugger, coverage, profiler, optimizer); a free one of the others is taken.
_TOOL_IDS = (4, 3)
_NAME = "gpuwise-probe"
# Starts kept per thread: calls that left by an exception leave theirs behind until the next return drops them.
MAX_OPEN_CALLS = 64


def available():
    return _monitoring is not None


class CallWatch(object):
    """The calls of a few code objects, each reported when it returns: `on_return(t0, value, frame, ident)`."""

    def __init__(self):
        self.tool = None
        self.watched = {}  # code -> on_return
        self.start_watched = {}  # code -> on_start(frame, ident), for starts only
        self.starts = {}  # thread ident -> [(id(frame), t0)], innermost last (ids: a frame kept alive keeps its locals)

    def _claim(self):
        if self.tool is not None:
            return True
        if _monitoring is None:
            return False
        for tool in _TOOL_IDS:
            try:
                _monitoring.use_tool_id(tool, _NAME)
            except ValueError:
                continue  # taken by another tool
            ev = _monitoring.events
            _monitoring.register_callback(tool, ev.PY_START, self._on_start)
            _monitoring.register_callback(tool, ev.PY_RETURN, self._on_return)
            self.tool = tool
            return True
        return False

    def watch(self, code, on_return):
        """Reports every return of `code`; returns the undo (None when no tool id is free: use a wrapper)."""
        if not self._claim():
            return None
        ev = _monitoring.events
        self.watched[code] = on_return
        _monitoring.set_local_events(self.tool, code, ev.PY_START | ev.PY_RETURN)

        def undo():
            self.unwatch(code)

        return undo

    def watch_start(self, code, on_start):
        """Reports every start of `code` (`on_start(frame, ident)`, the frame's arguments bound); returns the undo,
        None when `code` is watched already or no tool id is free."""
        if code in self.watched or code in self.start_watched or not self._claim():
            return None
        self.start_watched[code] = on_start
        _monitoring.set_local_events(self.tool, code, _monitoring.events.PY_START)

        def undo():
            if self.start_watched.pop(code, None) is not None:
                self._quiet(code)

        return undo

    def pause(self, code):
        """`code`'s calls are not seen until `resume(code)`; the watch stays. False where it is not watched here."""
        if self.tool is None or code not in self.watched:
            return False
        _monitoring.set_local_events(self.tool, code, 0)
        return True

    def resume(self, code):
        if self.tool is not None and code in self.watched:
            ev = _monitoring.events
            _monitoring.set_local_events(self.tool, code, ev.PY_START | ev.PY_RETURN)

    def unwatch(self, code):
        if self.watched.pop(code, None) is None or self.tool is None:
            return
        self._quiet(code)

    def _quiet(self, code):
        if self.tool is None:
            return
        _monitoring.set_local_events(self.tool, code, 0)
        if not self.watched and not self.start_watched:
            self.release()

    def release(self):
        """Every watch ended and the tool id given back."""
        tool, self.tool = self.tool, None
        if tool is None:
            return
        for code in list(self.watched) + list(self.start_watched):
            try:
                _monitoring.set_local_events(tool, code, 0)
            except Exception:
                pass
        self.watched.clear()
        self.start_watched.clear()
        self.starts.clear()
        ev = _monitoring.events
        try:
            _monitoring.register_callback(tool, ev.PY_START, None)
            _monitoring.register_callback(tool, ev.PY_RETURN, None)
            _monitoring.free_tool_id(tool)
        except Exception:
            pass

    def _on_start(self, code, offset):
        on_start = self.start_watched.get(code)
        if on_start is not None:
            on_start(_getframe(1), _get_ident())
            return
        stack = self.starts.get(_get_ident())
        if stack is None:
            stack = self.starts[_get_ident()] = []
        if len(stack) >= MAX_OPEN_CALLS:
            del stack[: MAX_OPEN_CALLS // 2]  # starts of calls that raised (StopIteration at each epoch's end)
        stack.append((id(_getframe(1)), _perf_counter()))

    def _on_return(self, code, offset, value):
        frame = _getframe(1)
        key = id(frame)
        stack = self.starts.get(_get_ident())
        t0 = None
        while stack:
            f, t = stack.pop()
            if f == key:
                t0 = t
                break
        on_return = self.watched.get(code)
        if on_return is not None and t0 is not None:
            on_return(t0, value, frame, _get_ident())
