"""What runs the background work (background.py) when it is due, without a Python thread that outlives it.

A resident thread, however hidden from `threading`, is listed by faulthandler's dump of all threads and by
`sys._current_frames()`: the script would see one thread more than without doctor. On Linux the work is run by a POSIX
timer instead (`timer_create` with SIGEV_THREAD, one-shot, armed again by each run for the next): libc calls it on a
native thread of its own, and ctypes gives that thread a Python thread state only for the duration of the call, so
between runs the process holds no thread of the probe's that Python knows. libc's helper thread blocks every signal:
the signals the script receives go where they went without doctor. A process where the timer cannot be made (another
OS, a glibc before 2.34, whose timers are in librt) gets the resident thread (`_thread`), as before.

What stays visible, and why: glibc starts one helper thread at the first `timer_create` (it waits for the timer's
signal and starts a thread per expiry), so /proc/self/task lists one thread more from then on (two during a run). It
cannot be avoided where the watchdog runs: a stall is the training thread making no progress, so only a thread beside
it can notice it and read its stack (and a signal, the other way, would be a handler the script sees). So the timer
is made only where a duty needs it (background.py: a process that uses CUDA, a rank of a distributed run, an armed
time window); elsewhere the work runs inline and the process has no thread of the probe's.
The C functions are looked up when the module is imported (doctor's boot), never later: see `_libc_timers`.

`run()` does the work and returns the seconds until the next run (None: no more). `wake()` asks for a run now, from any
thread; `stop()` ends the runs and returns once none is in progress, so the interpreter's end never meets one.
"""
import _thread
import ctypes
import os
import sys
import time

_perf_counter = time.perf_counter

CLOCK_MONOTONIC = 1
SIGEV_THREAD = 2
# A run woken again while it ran starts over at once at most this often; then the next waits this long.
MAX_AGAIN = 3
AGAIN_DELAY_S = 0.01
# stop(): how long it waits for a run that the timer had already started (the GIL or libc's dispatch delaying it: a
# notification enters within microseconds once the GIL is free, which stop() leaves free while it waits).
STOP_WAIT_S = 0.2
# An expiry this close after stop()'s clock read may still have fired before the delete: waited for too.
STOP_RACE_S = 0.001
_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _SigEvent(ctypes.Structure):
    # struct sigevent on Linux (64 bytes): the value, the signal number, the notification, then the union whose
    # SIGEV_THREAD member is (function, attributes).
    _fields_ = [
        ("value", ctypes.c_void_p),
        ("signo", ctypes.c_int),
        ("notify", ctypes.c_int),
        ("function", _CALLBACK),
        ("attributes", ctypes.c_void_p),
        ("pad", ctypes.c_byte * (64 - 16 - 2 * ctypes.sizeof(ctypes.c_void_p))),
    ]


class _TimeSpec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("interval", _TimeSpec), ("value", _TimeSpec)]


def _libc_timers():
    """(timer_create, timer_settime, timer_delete) from the C library already in the process, looked up once when the
    probe is imported (doctor's boot, before the script runs), or None. No library is loaded for them, and none
    searched for: `ctypes.util.find_library` starts an `ldconfig` child (whose SIGCHLD a script's handler would
    reap), and a load or a symbol lookup after the script started is an event its audit hooks see (`ctypes.dlopen`,
    `ctypes.dlsym`). `ctypes.pythonapi` is the process's own symbols, opened when ctypes was imported: libc's timers
    are there from glibc 2.34 (librt's before: the resident thread then). Its calls keep the GIL (short calls: armed
    from the training thread, no other thread takes it there)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.pythonapi
        create, settime, delete = lib.timer_create, lib.timer_settime, lib.timer_delete
    except (AttributeError, OSError):
        return None
    create.argtypes = [ctypes.c_int, ctypes.POINTER(_SigEvent), ctypes.POINTER(ctypes.c_void_p)]
    settime.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_ITimerSpec), ctypes.c_void_p]
    delete.argtypes = [ctypes.c_void_p]
    return create, settime, delete


class TimerTicker(object):
    """Runs `run` from a POSIX timer's notification (see the module docstring)."""

    def __init__(self, run, timers):
        self.run = run
        self._create, self._settime, self._delete = timers
        self.callback = _CALLBACK(self._fire)  # referenced for the timer's life: libc calls it
        self.timer = ctypes.c_void_p()
        self.stopped = False
        self.running = False
        self.runner = None  # the thread of the run in progress
        self.again = False
        self.pending = False  # armed and not yet entered
        self.due_at = None
        event = _SigEvent()
        event.notify = SIGEV_THREAD
        event.function = self.callback
        if self._create(CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(self.timer)) != 0:
            raise OSError("timer_create failed")  # (its errno is not read: ctypes.get_errno is an audit event)

    def start(self, delay_s=0.0):
        self._arm(delay_s)

    def _arm(self, delay_s):
        if self.stopped:
            return
        delay_s = max(delay_s, 1e-6)  # a zero value disarms the timer
        spec = _ITimerSpec()
        spec.value.sec = int(delay_s)
        spec.value.nsec = int((delay_s - int(delay_s)) * 1e9)
        self.pending = True
        self.due_at = _perf_counter() + delay_s  # perf_counter is CLOCK_MONOTONIC on Linux
        self._settime(self.timer, 0, ctypes.byref(spec), None)

    def wake(self):
        if self.running:
            self.again = True
        else:
            self._arm(0.0)

    def _fire(self, _value):
        # On libc's thread, with a thread state made for this call. Nothing may escape (ctypes would print it).
        try:
            self.pending = False
            if self.stopped or self.running or sys.is_finalizing():
                return
            self.running = True
            self.runner = _thread.get_ident()
            delay = None
            try:
                for _ in range(MAX_AGAIN):
                    self.again = False
                    delay = self.run()
                    if not self.again or delay is None:
                        break
                else:
                    self.again = False
                    delay = AGAIN_DELAY_S
                if delay is not None:
                    self._arm(delay)
            finally:
                self.running = False
                self.runner = None
            if self.again and delay is not None:  # woken after its last run began, before `running` fell
                self._arm(0.0)
        except BaseException:
            pass

    def stop(self):
        if self.stopped:
            return
        self.stopped = True
        now = _perf_counter()
        self._delete(self.timer)
        if self.runner == _thread.get_ident():
            return  # called from the run itself (the probe switching off): it ends when it returns
        # A notification already on its way (due before the delete) enters, sees `stopped` and returns; one running
        # ends its run. Wait for both with the GIL released, so neither is left inside the interpreter's end.
        until = now + STOP_WAIT_S
        due = self.due_at is not None and self.due_at <= now + STOP_RACE_S
        while (self.running or (self.pending and due)) and _perf_counter() < until:
            time.sleep(0.001)


class ThreadTicker(object):
    """The fallback: one resident thread (`_thread`: not in `threading.enumerate()`)."""

    def __init__(self, run):
        self.run = run
        self.stopped = False
        self.wake_lock = _thread.allocate_lock()
        self.wake_lock.acquire()

    def start(self, delay_s=0.0):
        _thread.start_new_thread(self._loop, (delay_s,))

    def wake(self):
        try:
            self.wake_lock.release()
        except RuntimeError:
            pass  # already released: the thread will see the new work anyway

    def _loop(self, delay_s):
        pid = os.getpid()
        while not self.stopped:
            if delay_s > 0:
                self.wake_lock.acquire(timeout=delay_s)
            if self.stopped or os.getpid() != pid:
                return
            delay_s = self.run()
            if delay_s is None:
                return

    def stop(self):
        self.stopped = True
        self.wake()


_TIMERS = _libc_timers()  # at import: see _libc_timers


def make_ticker(run, native=True):
    """A TimerTicker where libc has the timers (`native`), else a ThreadTicker; not started."""
    if native:
        if _TIMERS is not None:
            try:
                return TimerTicker(run, _TIMERS)
            except (OSError, ctypes.ArgumentError):
                pass
    return ThreadTicker(run)
