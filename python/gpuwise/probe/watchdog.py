"""The watchdog: a daemon thread that reports a stall (no progress for a while) with the stepping thread's stack."""
import sys
import threading
import time

from .window import _median

# The watchdog: a stall is no progress for max(floor, STALL_STEP_FACTOR x the median step); frames kept of its stack.
STALL_STEP_FACTOR = 10
STALL_STACK_FRAMES = 30


class WatchdogMixin(object):
    def _ensure_watchdog(self):
        if self.watchdog is not None or self.stall_floor_s <= 0:
            return
        ident = threading.get_ident()  # the thread that steps (the main thread, as a rule)
        t = threading.Thread(target=self._watchdog_loop, args=(ident,), name="gpuwise-watchdog", daemon=True)
        self.watchdog = t
        t.start()

    def _stall_threshold(self):
        times = list(self.host_step_times)
        return max(self.stall_floor_s, STALL_STEP_FACTOR * _median(times)) if times else self.stall_floor_s

    def _watchdog_loop(self, ident):
        try:
            poll = min(1.0, max(0.05, self.stall_floor_s / 10.0))
            seen = None
            since = time.perf_counter()
            sent_at = None
            while not self.disabled and not self.ended:
                time.sleep(poll)
                progress = (self.step, self.batch_calls, self.forward_calls, self.backward_calls)
                now = time.perf_counter()
                if progress != seen:
                    seen, since, sent_at = progress, now, None
                    continue
                threshold = self._stall_threshold()
                if now - since < threshold or (sent_at is not None and now - sent_at < self.stall_repeat_s):
                    continue
                frame = sys._current_frames().get(ident)
                if frame is None:
                    return  # the stepping thread is gone
                stack = _format_stack(frame)
                frame = None
                last = self.last_boundary if self.last_boundary is not None else since
                self._send(
                    "stall",
                    {"step": self.step + 1, "sinceStepS": max(0.0, now - last), "thresholdS": threshold, "stack": stack},
                    wait_s=2.0,
                )
                sent_at = now
        except Exception:
            return  # fail-open: the watchdog ends silently, the probe and the training go on


def _format_stack(frame):
    """A thread's Python stack as `file:line function`, innermost last, its innermost STALL_STACK_FRAMES frames."""
    out = []
    f = frame
    while f is not None and len(out) < STALL_STACK_FRAMES:
        out.append("%s:%d %s" % (f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    out.reverse()
    return out
