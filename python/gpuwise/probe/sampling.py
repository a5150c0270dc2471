"""The sampled steady loop: past the first `GPUWISE_FULL_STEPS` steps, once the profiler window is done and an optimizer
marks the steps, a step is recorded in full only in bursts, the steps whose number modulo SAMPLE_PERIOD is below
SAMPLE_BURST (the same steps on every rank). Between bursts ("quiet") a step costs the hooks a counter and the beacon's
store: no clock, no record, no CUDA event (steps.py counts it).

The DataLoader's `__next__` is not watched then: its batches, for the `loader` record, are read off the iterator's own
count at each optimizer step; a new epoch or another loader's iterator ends the pause. Where sys.monitoring watches
`torch.autograd.backward` (Python >= 3.12) it is paused too: between bursts the optimizer's step is the progress the
watchdog reads. doctor keeps a spread sample of a long run's steps anyway (src/doctor/recordSample.ts), and a burst of
consecutive steps keeps what a stall pattern needs. Measured on an H200 host, every step recorded cost +54 to +90 us a
step at 1 ms steps, a counted step +5.5 to +11: bursts of 32 in 1024 keep the mix at 0.65-1.05% of a 1.2 ms step there
(bench/doctor/results/h200-2026-11-29-sampled-final.txt).
"""
import weakref

from . import safe

# Past the full head, the steps recorded: those whose number modulo SAMPLE_PERIOD is below SAMPLE_BURST (1 in 32).
SAMPLE_BURST = 32
SAMPLE_PERIOD = 1024


def _yielded(it):
    """A DataLoader iterator's count of batches returned (`_num_yielded`, off its instance dict), None if unknown."""
    d = safe.instance_dict(it)
    n = d.get("_num_yielded") if d is not None else None
    return n if type(n) is int else None


class Sampler(object):
    """Whether the loop is between bursts (`burst_at`: the quiet step whose end starts the next burst, None while every
    step is recorded), and the watches it pauses meanwhile."""

    def __init__(self, cfg, calls, loader_watch):
        self.full_steps = cfg.full_steps
        self.max_steps = cfg.max_steps
        self.calls = calls
        self.loader_watch = loader_watch
        self.burst_at = None
        self.batches_paused = False  # the DataLoader's batches read off its iterator (patches.py skips `__next__`)
        self.next_code = None  # the code of the DataLoader iterators' __next__, where sys.monitoring watches it
        self.backward_code = None  # torch.autograd.backward's, where sys.monitoring watches it
        self.feed = None  # (weakref to the iterator, its loader's state) the steps' DataLoader batches come from
        self.feed_id = None  # id() of that iterator
        self.feed_mark = 0  # the iterator's count of batches when the batches were paused

    def watched(self, next_code=None, backward_code=None):
        """The codes sys.monitoring watches (patches.py), paused between bursts."""
        if next_code is not None:
            self.next_code = next_code
        if backward_code is not None:
            self.backward_code = backward_code

    def quiet_until(self, step):
        """After step `step` ended in full: the step whose end starts the next burst when the steps up to it may be
        only counted, else None. The first test is all a step inside a burst pays."""
        nxt = step + 1
        full = self.full_steps
        if nxt % SAMPLE_PERIOD < SAMPLE_BURST or full is None or nxt < full:
            return None
        burst_at = nxt - nxt % SAMPLE_PERIOD + SAMPLE_PERIOD - 1
        if self.max_steps is not None:
            burst_at = min(burst_at, self.max_steps - 1)  # the last step ends in full (--steps)
        return burst_at if burst_at > step else None

    def enter(self, burst_at, last_step_mixed):
        """The steps up to `burst_at` are only counted: the DataLoader's `__next__` and the backward pass unwatched."""
        self.burst_at = burst_at
        self._pause_batches(last_step_mixed)
        if self.backward_code is not None:
            self.calls.pause(self.backward_code)

    def feed_from(self, it):
        """Iterator `it` hands the stepping thread its batches now: the one whose count the loop reads between bursts."""
        self.feed_id = id(it)
        state = self.loader_watch.state_of(it)
        try:
            ok = state is not None and _yielded(it) is not None
            self.feed = (weakref.ref(it), state) if ok else None
        except TypeError:
            self.feed = None

    def _pause_batches(self, last_step_mixed):
        """Between bursts the DataLoader's `__next__` is not watched (sys.monitoring's calls cost a counted step most of
        its +21 us on an H200 host; a wrapper returns at once): only for the one iterator the steps take their batches
        from, and not after a step that mixed two (zipped loaders)."""
        feed = self.feed
        it = feed[0]() if feed is not None and not last_step_mixed else None
        if it is None:
            return
        n = _yielded(it)
        if n is None or (self.next_code is not None and not self.calls.pause(self.next_code)):
            return
        self.feed_mark = n
        feed[1].batches_pending = 0
        self.batches_paused = True

    def count_batches(self):
        """At a counted optimizer step: the batches so far, off the iterator's count, for the loader record."""
        it = self.feed[0]()
        n = _yielded(it) if it is not None else None
        if n is not None:
            self.feed[1].batches_pending = max(0, n - self.feed_mark)

    def end_quiet(self):
        """Every step is watched again (`enter` undone)."""
        self.burst_at = None
        if self.batches_paused:
            self.batches_paused = False
            if self.next_code is not None:
                self.calls.resume(self.next_code)
            state = self.feed[1]
            pending, state.batches_pending = state.batches_pending, 0
            state.batches += pending
        if self.backward_code is not None:
            self.calls.resume(self.backward_code)

    def after_fork(self):
        """In a forked child: the parent's sampled loop is not the child's."""
        if self.burst_at is not None:
            self.end_quiet()
        self.feed = self.feed_id = None
