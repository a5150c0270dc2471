"""The steadiness stop of a `tune --plan` trial: the run ends once its steady steps' mean is known well enough.

Only in a trial whose GPUWISE_TRIAL_STOP is set (src/cli/tunePlan.ts), one JSON object:

    {"relSpread": 0.01, "minSteps": 20, "maxSeconds": 8}

At a step's end (steps.py) the host step times so far are read as tune reads them (src/tune/planTrials.ts,
`measureTrial`; src/run/steps.ts, `steadyStart`): the first step left out, the warm-up before the steps reach the pace
of the second half left out (a compilation's, the workers filling their queues), and of the steady steps the mean and
its standard error from the means of BLOCKS blocks of consecutive steps. The trial stops after the step at which

- "steady": at least `minSteps` steady steps and a standard error at most `relSpread` of the mean, or
- "seconds": at least `minSteps` steady steps adding up to `maxSeconds` (a noisy step: its spread is what it is),

with the clean stop of doctor's --steps (core.py, `stop_after`); GPUWISE_MAX_STEPS stays the cap of steps. Checked
every tenth more steps (at least CHECK_MIN_GAP): a check sorts the second half's times, a few microseconds a step
amortised. One process decides for itself: a distributed trial (WORLD_SIZE > 1) is not stopped here, since ranks that
stopped at different steps would leave one waiting in a collective; it runs to its cap.
"""
import json

# The same rule as src/run/steps.ts (steadyStart) and src/tune/planTrials.ts (meanAndSpread).
STEADY_WINDOW = 5
STEADY_TOLERANCE = 0.10
STEADY_MIN_STEPS = 4
BLOCKS = 5
CHECK_MIN_GAP = 5


def parse(text):
    """(relSpread, minSteps, maxSeconds) from GPUWISE_TRIAL_STOP, or None when absent or malformed."""
    if not text:
        return None
    try:
        d = json.loads(text)
        rel, least, most = float(d["relSpread"]), int(d["minSteps"]), float(d["maxSeconds"])
    except (ValueError, KeyError, TypeError):
        return None
    return (rel, least, most) if rel > 0 and least >= 2 * BLOCKS and most > 0 else None


def _median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2])


def steady_start(times):
    """The index where the steady part of `times` starts (steps.ts's steadyStart)."""
    n = len(times)
    if n < STEADY_MIN_STEPS:
        return 0
    pace = _median(times[n // 2:])
    w = max(2, min(STEADY_WINDOW, n // 4))
    near = lambda x: abs(x - pace) <= STEADY_TOLERANCE * pace  # noqa: E731
    for k in range(0, n - w + 1):
        if near(times[k]) and near(_median(times[k:k + w])):
            return k
    return n // 2


def mean_and_spread(times):
    """(mean, standard error of the mean from BLOCKS block means) of steady steps in order (planTrials' meanAndSpread)."""
    n = len(times)
    mean = sum(times) / n
    k = min(BLOCKS, n // 2)
    if k < 2:
        return mean, mean
    size = n // k
    means = []
    for b in range(k):
        part = times[b * size:(n if b == k - 1 else (b + 1) * size)]
        means.append(sum(part) / len(part))
    m = sum(means) / k
    var = sum((x - m) ** 2 for x in means) / (k - 1)
    return mean, (var / k) ** 0.5


class SteadyStop(object):
    def __init__(self, rel_spread, min_steps, max_seconds):
        self.rel_spread = rel_spread
        self.min_steps = min_steps
        self.max_seconds = max_seconds
        self.times = []  # host step times from the second step on (s)
        self.next_check = min_steps
        self.decision = None  # {"why", "step", "steadySteps", "meanS", "spreadS"} once it stops

    def done(self, step, step_time):
        """After step `step` ended in `step_time` s (None for the first): whether the trial stops after it."""
        if step_time is None or step <= 1 or self.decision is not None:
            return self.decision is not None
        times = self.times
        times.append(step_time)
        if len(times) < self.next_check:
            return False
        self.next_check = len(times) + max(CHECK_MIN_GAP, len(times) // 10)
        steady = times[steady_start(times):]
        if len(steady) < 2 * BLOCKS:
            return False
        mean, spread = mean_and_spread(steady)
        if len(steady) >= self.min_steps and mean > 0 and spread <= self.rel_spread * mean:
            why = "steady"
        elif len(steady) >= self.min_steps and sum(steady) >= self.max_seconds:
            why = "seconds"
        else:
            return False
        self.decision = {"why": why, "step": step, "steadySteps": len(steady), "meanS": mean, "spreadS": spread}
        return True


    def said(self):
        """Why the run stopped, for its stderr."""
        d = self.decision
        if d is None:
            return "--steps"
        if d["why"] == "steady":
            return "tune --plan: steady, the mean step known within %.1f%%" % (100.0 * d["spreadS"] / d["meanS"])
        return "tune --plan: %g s of steady steps" % self.max_seconds


def install(probe, text):
    """The stop for this trial's process, or None (no setting, or a rank of several)."""
    got = parse(text)
    world = probe.cfg.world_size
    if got is None or (world is not None and world > 1):
        return None
    return SteadyStop(*got)
