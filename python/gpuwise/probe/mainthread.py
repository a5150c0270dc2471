"""Runs a function on the main thread, between two of its bytecodes, without a signal.

torch.profiler records the CPU ops of the thread that starts it, so a profiler window that a timer decides (the time
window of a run without steps, a step window closed by its time limit) must start and stop on the main thread. The
probe asks the interpreter to run a pending call there (`Py_AddPendingCall`, the C API the interpreter's own signal
handling uses): no signal handler is installed and no signal is sent, so a signal the program uses is never taken.
As with a signal, a main thread inside one long C call runs it when the call returns.
"""
import ctypes
import sys
import threading

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class MainThreadCall(object):
    def __init__(self):
        self._keep = []  # the C callbacks not run yet (ctypes frees a callback that nothing references)
        try:
            add = ctypes.pythonapi.Py_AddPendingCall
            add.argtypes = [_CALLBACK, ctypes.c_void_p]
            add.restype = ctypes.c_int
            self._add = add
        except (AttributeError, TypeError, OSError):
            self._add = None

    def available(self):
        return self._add is not None

    def request(self, fn):
        """From any thread: `fn(frame)` runs on the main thread at its next bytecode, `frame` being the main thread's
        code it came between. False when it could not be scheduled (no such API, the queue full)."""
        if self._add is None:
            return False
        keep = self._keep

        def run(_arg):
            keep.remove(cb)
            if threading.current_thread() is threading.main_thread():
                try:
                    fn(sys._getframe(1))
                except Exception:
                    pass  # fn reports its own errors; a pending call must not leave an exception set
            return 0

        cb = _CALLBACK(run)
        keep.append(cb)
        if self._add(cb, None) != 0:
            keep.remove(cb)
            return False
        return True
