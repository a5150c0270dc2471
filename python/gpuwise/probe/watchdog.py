"""The watchdog: a stall is no progress (steps, batches, forwards, backward passes) for max(GPUWISE_STALL_S,
STALL_STEP_FACTOR x the median step); it is reported with the stepping thread's Python stack, and again every
GPUWISE_STALL_REPEAT_S while it lasts. Checked by the background runs (background.py): it costs the
training loop nothing per step."""
import sys

# A stall is no progress for max(floor, STALL_STEP_FACTOR x the median step); frames kept of its stack.
STALL_STEP_FACTOR = 10
STALL_STACK_FRAMES = 30


def median(xs):
    ys = sorted(xs)
    n = len(ys)
    return 0.0 if n == 0 else (ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2]))


def format_stack(frame):
    """A thread's Python stack as `file:line function`, innermost last, its innermost STALL_STACK_FRAMES frames."""
    out = []
    f = frame
    while f is not None and len(out) < STALL_STACK_FRAMES:
        out.append("%s:%d %s" % (f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    out.reverse()
    return out


class Watchdog(object):
    def __init__(self, floor_s, repeat_s):
        self.floor_s = floor_s
        self.repeat_s = repeat_s
        self.seen = None
        self.since = None
        self.sent_at = None

    def threshold(self, step_times):
        times = list(step_times)
        return max(self.floor_s, STALL_STEP_FACTOR * median(times)) if times else self.floor_s

    def check(self, progress, now, step_times, thread_ident, last_boundary, step):
        """The `stall` record's fields when the loop stalls now, else None. `progress` is any value that changes
        whenever the loop makes progress."""
        if self.floor_s <= 0:
            return None
        if progress != self.seen or self.since is None:
            self.seen, self.since, self.sent_at = progress, now, None
            return None
        threshold = self.threshold(step_times)
        if now - self.since < threshold or (self.sent_at is not None and now - self.sent_at < self.repeat_s):
            return None
        frame = sys._current_frames().get(thread_ident)
        if frame is None:
            return None  # the stepping thread is gone
        stack = format_stack(frame)
        frame = None
        last = last_boundary if last_boundary is not None else self.since
        self.sent_at = now
        return {"step": step + 1, "sinceStepS": max(0.0, now - last), "thresholdS": threshold, "stack": stack}
