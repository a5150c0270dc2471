"""What each run of the background work does (background.py): the records the socket did not take, the periodic readings
(loader.py, threads.py), the watchdog (watchdog.py) and the profiler window's timers (window.py); and how soon the next
run is due. `life` (core.py): `announced`, `ended`, `cuda_on`."""
import time

from .background import IDLE_TICK_S, TICK_S
from .loader import READ_EVERY_S

_perf_counter = time.perf_counter


class Ticks(object):
    def __init__(self, cfg, steps, window, sender, watchdog, loader_watch, thread_cpu, life):
        self.cfg = cfg
        self.steps = steps
        self.window = window
        self.sender = sender
        self.watchdog = watchdog
        self.loader_watch = loader_watch
        self.thread_cpu = thread_cpu
        self.life = life
        self.progress_seen = None  # the loop's progress at the last run (tick_s)

    def timed(self):
        """A run of the timer (ticker.py): it may wait for the socket, and it alone runs the watchdog."""
        sender, steps, life = self.sender, self.steps, self.life
        sender.flush(wait_s=2.0)
        now = _perf_counter()
        if life.announced and not life.ended:
            self.readings(now)
        if steps.clock.last_boundary is not None and not life.ended and steps.thread is not None:
            stall = self.watchdog.check(steps.progress(), now, steps.host_step_times, steps.thread, steps.clock.last_boundary, steps.step)
            if stall is not None:
                sender.put_record("stall", stall)
                sender.flush(wait_s=2.0)
        self.window.timers(now)

    def inline(self, now):
        """The run's work without a timer (background.run_inline, on the stepping thread): the records the socket did
        not take (never waiting), the readings, and a step window past its time limit closed here."""
        self.sender.flush(block=False)
        if self.life.announced and not self.life.ended:
            self.readings(now)
        if self.window.prof is not None:
            self.window.close_if_overdue(now)

    def needs_timer(self):
        """Whether a duty needs the timer's runs: the watchdog where doctor diagnoses hangs (a process that uses CUDA, a
        rank of a distributed run), or an armed time window."""
        cfg = self.cfg
        if self.window.time_pending():
            return True
        return cfg.stall_floor_s > 0 and (self.life.cuda_on or (cfg.world_size or 1) > 1)

    def readings(self, now, force=False):
        """The periodic readings due now (`force`: the last, at the end): each DataLoader's, and the CPU by thread once
        the steps run, since its readings are shares of steps."""
        steps = self.steps
        for fields in self.loader_watch.records(now, steps.step, force):
            self.sender.put_record("loader", fields)
        if steps.thread is not None:
            for fields in self.thread_cpu.records(now, steps.step, force):
                self.sender.put_record("cpu", fields)

    def tick_s(self):
        """The seconds until the next run: each is a moment a thread of the probe's exists (ticker.py), so they come no
        oftener than something is due. While the loop moves: the readings (READ_EVERY_S), finer while a step window is
        open (its time limit) or the time window waits; once nothing moves, the readings are shares of no step and
        only the watchdog is due, at a tenth of its floor."""
        cfg, window = self.cfg, self.window
        progress = self.steps.progress()
        idle = progress == self.progress_seen
        self.progress_seen = progress
        if cfg.stall_floor_s > 0:
            tick = cfg.stall_floor_s / 10.0 if idle else min(READ_EVERY_S, cfg.stall_floor_s / 10.0)
        else:
            tick = IDLE_TICK_S if idle else READ_EVERY_S
        if window.prof is not None and window.kind == "steps":
            tick = min(tick, TICK_S)
        if window.time_pending():
            tick = min(tick, TICK_S, cfg.time_after_s / 4.0, cfg.time_window_s / 4.0)
        return max(0.05, tick)
