"""Steps: which source marks them (optimizer, gpuwise.step(), DataLoader batches, backward passes, forwards of the
outermost module, CUDA graph replays), on which thread, where each ends, and the step record.

The stepping thread is the thread of the events that count: the first one that starts the clock, or another whose
source outranks the one counting (an optimizer stepping on a training thread takes the steps over from batches an
evaluator iterated on the main thread). Events of the same or a lower source on another thread are not the training's
and are left out.

A generation loop whose decoding forward is a captured graph (a static KV cache that transformers compiles, a loop over
`mode="reduce-overhead"`) calls its model eagerly for each prompt and replays the graph for each new token: once the
replays have taken the steps over (`graph_loop`), a prompt's forward is a step of its own, from its call to the first
replay after it (its input read: the batch and the prompt's length), and each replay after it a step (a decode step),
of whichever graph replays first after the prompt.

A step's end costs the training thread a few microseconds: a wall-clock read and a row queued; the rows are formatted
and written every few milliseconds (records.py). The thread's CPU clock is read on a sample of steps (stepclock.py).
Past the full head the steady loop is sampled (sampling.py): between bursts a step is only counted here.

Steps talks to the probe (`life`, core.py) through its public methods: `announce()`, `starts_training()`,
`stop_after()`, `guarded()`, `fail()`, and reads `announced`, `disabled`, `cuda_on`, `pid`.
"""
import threading
import time
import weakref

from .stepbatch import StepBatch
from .stepclock import StepClock
from .threads import native_id
from .window import STEADY_WINDOW

# Gradient accumulation over more micro-batches than this is rare; a loop that fetched this many
# batches (or ran this many backward passes) without any optimizer step is taken to have none.
FALLBACK_AFTER = 64
# Step sources by precedence: a source counts steps until a higher one shows up.
SOURCE_RANK = {"graph": 0, "forward": 1, "backward": 2, "batch": 3, "optimizer": 4, "marker": 5}
# Replays of the first CUDA graph with no step of a higher source between them: the graph is the loop.
GRAPH_TAKEOVER = 8

_get_ident = threading.get_ident
_perf_counter = time.perf_counter
_time = time.time


class Steps(object):
    def __init__(self, cfg, sender, beacon, background, patches, sampler, thread_cpu, loader_watch, life):
        self.rank = cfg.rank
        self.fault = cfg.fault
        self.max_steps = cfg.max_steps
        self.sender = sender
        self.beacon = beacon
        self.background = background
        self.patches = patches  # the fallbacks' patches, taken back at the first optimizer step
        self.sampler = sampler
        self.thread_cpu = thread_cpu
        self.loader_watch = loader_watch
        self.life = life
        self.gpu = self.model = self.root_watch = self.window = self.reader = None  # at torch's import (install)
        self.step = 0
        self.source = None  # None until the first step, then a key of SOURCE_RANK
        self.thread = None  # the stepping thread
        self.primary_optimizer = None  # weakref to the optimizer whose steps count
        self.optimizer_built = False
        self.optimizer_stepped = False
        self.clock = StepClock()
        self.batch = StepBatch()
        # Progress, for the watchdog and the background runs' pace.
        self.batch_calls = 0
        self.backward_calls = 0
        self.forward_calls = 0
        self.graph_replays = 0
        self.last_activity = None  # perf_counter() of the last step-like event (batch, forward, backward, replay ...)
        self.primary_graph = None
        self.replays_since_other = 0
        self.graph_loop = False  # the graph's replays took the steps over once: the loop's steps are replays
        self.host_step_times = []  # the last steps' host times (s), for the steady-state test and the watchdog
        self.wait_times = []
        self.next_step_work = None  # the probe's own work the next step record carries (`probeWork`)
        self.jobs_seen = 0
        self.backward_until_window = False  # the backward's watch is taken back once the window is done
        self.steady = None  # a `tune --plan` trial's steadiness stop (steady.py), set by trial.py

    def install(self, gpu, model, window, reader):
        """At torch's import: the collaborators that need torch."""
        self.gpu, self.model, self.root_watch, self.window, self.reader = gpu, model, model.root_watch, window, reader

    # ---------- which events count ----------

    def admits(self, source, ident):
        """Whether an event of `source` on thread `ident` counts (see the module docstring)."""
        t = self.thread
        if t is None or t == ident:
            return True
        return self.source is None or SOURCE_RANK[source] > SOURCE_RANK[self.source]

    def _takes_over(self, source):
        """Whether `source` may count steps now: no higher source is counting them."""
        return self.source is None or SOURCE_RANK[source] >= SOURCE_RANK[self.source]

    def _set_thread(self, ident):
        """On the thread `ident` itself (every caller is its hook)."""
        if self.thread != ident:
            self.thread = ident
            self.root_watch.set_thread(ident)
            self.thread_cpu.stepping_tid = native_id()

    def optimizer(self):
        """The optimizer whose steps count, or None."""
        return self.primary_optimizer() if self.primary_optimizer is not None else None

    def progress(self):
        """A value that changes whenever the loop makes progress (the watchdog's, the background runs' pace)."""
        return (self.step, self.batch_calls, self.forward_calls, self.backward_calls)

    def forwards_may_be_steps(self):
        """No batch, backward or optimizer step seen: the model's forwards may be the steps."""
        return self.batch_calls == 0 and self.backward_calls == 0 and not self.optimizer_stepped

    def mark_next_step(self, work):
        """The probe did work of its own (`work`) that the next step ends up carrying: its record says so."""
        if self.next_step_work is None:
            self.next_step_work = work

    def saw_optimizer_built(self):
        """An optimizer was constructed (patches.py): batches and backward passes wait for it to step."""
        self.optimizer_built = True

    # ---------- the events ----------

    def on_loader_iter(self, loader, it, t0=None):
        """`DataLoader.__iter__` returned `it`: a new epoch or another loader between bursts ends the pause (its batches
        are seen again from here; the next step, begun before, is left out of the statistics)."""
        if self.sampler.batches_paused:
            self.leave_quiet(self.thread)
            self.mark_next_step("sampling")
        if loader is not None and it is not None:
            self.loader_watch.on_iter(loader, it, self.step, t0)

    def on_batch(self, t0, wait_s, batch, ident, it=None):
        if it is not None:
            self.loader_watch.on_batch(it, t0 + wait_s)  # every loader's batches, whichever thread iterates it
        if self.sampler.burst_at is not None:
            self.batch_calls += 1  # between bursts: progress for the watchdog, nothing more
            return
        if self.thread not in (None, ident) and not self.admits("batch", ident):
            return
        if it is not None and id(it) != self.sampler.feed_id:
            self.batch.second_iterator()
            self.sampler.feed_from(it)
        self.last_activity = t0
        if self.window.prof is not None:
            self.window.close_if_overdue(t0)
        if self.clock.last_boundary is None:
            self.clock.start(t0, ident)  # the loop starts with its first batch
            self._set_thread(ident)
            self.life.starts_training()
        self.batch_calls += 1
        if self.root_watch.armed is not None:
            self.root_watch.give_up_calls()  # a DataLoader feeds the steps (batches outrank forwards)
        if self.fault == "batch" and self.batch_calls == 2:
            raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=batch")
        if self._takes_over("batch") and self.source != "batch" and self.batch_calls > 1 and (not self.optimizer_built or self.batch_calls > FALLBACK_AFTER):
            self.source = "batch"
        if self.source == "batch" and self.batch.batches > 0:
            # The previous batch's step ends where this fetch starts (its wait belongs to the next step).
            self.end_step(t0, "batch", ident)
        self.batch.loader_batch(wait_s, batch, self.reader)

    def on_backward(self, ident, t0, ended=True):
        """A backward pass called at `t0` (perf_counter) returned (`ended`): its call's wall time is the step's
        `backwardS`. Where only its start is seen (`ended` False: Python < 3.12, patches.py) it counts from there, and
        its wall time comes from the engine's callback at its end (`batch.backward_spans`). Never between bursts."""
        if not self.admits("backward", ident):
            return
        now = _perf_counter() if ended else t0
        self.last_activity = now
        self.backward_calls += 1
        if ended:
            self.batch.backward_s += now - t0
        watch = self.root_watch
        watch.reset_depth()  # a forward that raised left its depth behind: a backward ends it
        if self.window.prof is not None:
            self.window.close_if_overdue(now)
        if self.batch_calls == 0:
            self.batch.micro_batch_ended()  # the batch is the model's input: each micro-batch's forward must be seen
            watch.arm()
        if not self._takes_over("backward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.backward_calls <= FALLBACK_AFTER:
            return  # an optimizer exists: give it the chance to step (gradient accumulation)
        if self.source in (None, "forward", "graph"):
            if self.clock.last_boundary is None or self.source in ("forward", "graph"):
                # The first backward ends no step: the clock starts here (a whole step lies between two).
                self._start_clock(now, "backward", ident)
                return
        self.end_step(now, "backward", ident)

    def forward_seen(self, now):
        """The outermost module's forward was called (modelwatch.py): progress."""
        self.last_activity = now
        self.forward_calls += 1

    def forward_step(self, now, ident):
        """A forward that starts a step ends the one before (before its batch counts). Forward calls are the steps only
        for loops with nothing better: no batches, no backward."""
        if self.batch_calls or self.backward_calls or not self._takes_over("forward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.forward_calls <= FALLBACK_AFTER:
            return
        if self.source == "graph" and self.graph_loop and self.clock.last_boundary is not None:
            # A generation loop whose decoding forward is a graph: the last replay's step ends at the next prompt's
            # forward, which starts a step of its own (its input read), ended by the first replay after it.
            self.end_step(now, "graph", ident)
            self.source = "forward"
            self.replays_since_other = 0
            # Each prompt's decoding may replay a graph of its own (cudagraph trees record again for a new cache's
            # addresses: a static-cache generate() at batch 8 on an H200 counted only its first call's replays): the
            # first replay after the prompt names the graph that marks the steps.
            self.primary_graph = None
            return
        if self.source in (None, "graph"):
            self._start_clock(now, "forward", ident)  # the step runs from one forward's start to the next's
            return
        self.end_step(now, "forward", ident)

    def optimizer_hook(self, optimizer, args=None, kwargs=None):
        """Every optimizer step: whichever hook torch offers calls it (patches.py), and torch 2's global post-step hook
        is this method itself (`args` and `kwargs` the step's). Between bursts the step is counted here, in this one
        frame: the calls a recorded step goes through (a lambda, `guarded`, `_on_optimizer_step`) were half of a
        counted step's hooks (on the VM, `opt.step()` timed counting against switched off: +0.6 us before, +0.3 us)."""
        life = self.life
        if life.disabled:
            return
        ident = _get_ident()
        sampler = self.sampler
        if sampler.burst_at is None:
            life.guarded(self._on_optimizer_step, optimizer, ident)
            return
        if ident != self.thread:
            return  # another thread's optimizer: not the steps the optimizer counts (`admits`)
        try:
            if self.primary_optimizer() is not optimizer:
                return
            step = self.step = self.step + 1
            self.beacon.set(step)
            if sampler.batches_paused:
                sampler.count_batches()  # the batches so far, for the loader record (loader.py)
            if step >= sampler.burst_at:
                self.leave_quiet(ident)
        except Exception as e:
            life.fail(e)

    def _on_optimizer_step(self, optimizer, ident):
        if self.thread not in (None, ident) and not self.admits("optimizer", ident):
            return
        now = _perf_counter()
        self.last_activity = now
        first = not self.optimizer_stepped
        self.optimizer_stepped = True
        if self.source == "marker":
            return  # the script marks its steps itself
        # An optimizer step overrides the batch fallback: the batches before were not training
        # (a pass over the data before the optimizer existed), so their step count ends here.
        if self.primary_optimizer is None:
            self.primary_optimizer = weakref.ref(optimizer)
        elif self.primary_optimizer() is not optimizer:
            return  # several optimizers (e.g. a GAN): the first one's steps mark the steps
        self.end_step(now, "optimizer", ident)
        if first:
            self._first_optimizer_step()

    def _first_optimizer_step(self):
        """The patches only the fallbacks needed are taken back."""
        self.patches.restore("optimizer-init")
        if self.batch_calls > 0:
            # Steps come from the optimizer and batches from the DataLoader: backward passes and the model's input are
            # no longer needed (a loop without a DataLoader keeps them: each micro-batch's forward is its batch). Where
            # sys.monitoring watches the backward (nothing of it visible to the script), it stays until the window is
            # done: its time in the window's steps and outside them tells the profiler's cost (`backwardS`).
            if self.sampler.backward_code is not None and not self.window.done:
                self.backward_until_window = True
            else:
                self.patches.restore("backward")
            self.root_watch.disarm()

    def on_marker(self, ident):
        """`gpuwise.step()`."""
        if not self.admits("marker", ident):
            return
        if self.sampler.burst_at is not None:
            self.leave_quiet(ident)  # the script marks its steps from here: they outrank the optimizer's
        now = _perf_counter()
        self.last_activity = now
        if self.source != "marker":
            # Any other source that started the clock (a backward pass, a forward) did so mid-step.
            restart = self.source is not None
            self.source = "marker"
            if self.clock.last_boundary is None or restart:
                # The first mark starts the first marked step: no DataLoader started the clock, or the
                # steps so far came from another source (their last one ended elsewhere).
                self._start_clock(now, "marker", ident)
                return
        self.end_step(now, "marker", ident)

    def on_graph_replay(self, graph, ident):
        if self.sampler.burst_at is not None or not self.admits("graph", ident):
            return
        now = _perf_counter()
        self.last_activity = now
        self.graph_replays += 1
        if self.primary_graph is None:
            self.primary_graph = weakref.ref(graph)
        elif self.primary_graph() is not graph:
            return  # several graphs a step (forward and backward graphs): the first one's replays mark the steps
        if self.source == "graph":
            self.end_step(now, "graph", ident)
            return
        self.replays_since_other += 1
        if self.source is None:
            if self.optimizer_built and not self.optimizer_stepped and self.graph_replays <= FALLBACK_AFTER:
                return
            self._start_clock(now, "graph", ident)
            self.graph_loop = True
        elif self.source == "forward" and self.graph_loop and self.replays_since_other == 1:
            # The prompt's forward (eager, before a captured decoding forward) ends at the first replay after it: its
            # step is the time to the first token, and the replays after it are the decode steps.
            self.end_step(now, "forward", ident)
            self.source = "graph"
        elif self.replays_since_other >= GRAPH_TAKEOVER:
            # The higher source fell silent while the graph kept replaying: the whole step was captured in it.
            self._start_clock(now, "graph", ident)
            self.graph_loop = True

    def _start_clock(self, now, source, ident):
        """`source` starts counting: what was seen before belongs to no step."""
        self.source = source
        self.clock.start(now, ident)
        self._set_thread(ident)
        self.batch.reset()
        self.life.starts_training()

    # ---------- the step's end ----------

    def end_step(self, now, source, ident):
        """A step ends: its record queued. The common path is a few attribute reads, two clock reads and a tuple; the
        rest (the first step, the probe's own work, another thread, the model record) only when `rare` says so."""
        self.source = source
        step = self.step = self.step + 1
        self.beacon.set(step)  # survives a SIGKILL that takes the queued records (beacon.py)
        step_time, host_cpu, cpu = self.clock.lap(now, step, ident)
        batch, bg, window, life = self.batch, self.background, self.window, self.life
        work, first = self.next_step_work, not life.announced
        if batch.backward_spans:
            batch.add_backward_spans()  # passes seen from their start (patches.py) that ended since
        if source != "graph":
            self.replays_since_other = 0
        rare = first or work is not None or self.thread != ident or self.model.sent != "step" or self.fault or bg.busy is not None or bg.jobs_done != self.jobs_seen
        work, foreign_input = self._rare_end(step, source, ident, first, work) if rare else (work, False)
        samples, tokens, seq_len, batch_source, forwards = batch.fields(foreign_input)
        if step_time is not None:
            self._keep_times(step_time, batch.data_wait_s)
        last_step = self.max_steps is not None and step >= self.max_steps
        if not last_step and self.steady is not None:
            last_step = self.steady.done(step, step_time)  # a trial whose steady mean is known (steady.py)
        cuda, gpu = life.cuda_on, self.gpu
        # A step row (records.py, _STEP_LINE's order): a tuple, formatted when the queue is written.
        wrote = self.sender.put(
            (
                life.protocol, life.pid, self.rank, _time(), gpu.step_times(step) if cuda else (), step, step_time, host_cpu,
                batch.data_wait_s, batch.batches, forwards, samples, tokens, seq_len, batch_source, source,
                gpu.memory(now, force=last_step or first) if cuda else None, window.prof is not None and window.kind == "steps",
                work, batch.backward_s if batch.backward_s > 0 else None,
            ),
            now=first,
        )
        self.clock.restart(now, cpu, ident)
        batch.reset()
        history_stopped = self._after_step(source, batch_source)
        if last_step:
            life.stop_after(step, self.steady.said() if self.steady is not None else "--steps")  # raises SystemExit
        burst_at = self.sampler.quiet_until(step)
        if burst_at is not None and self._may_go_quiet():
            self.sampler.enter(burst_at, batch.last_step_mixed)
        inline = bg.ticker is None and (bg.jobs or now >= bg.inline_at) and bg.run_inline(now)  # no timer: due work
        if source != "batch" and (wrote or rare or inline or window.prof is not None or not window.done or history_stopped):
            # The probe's own work at the boundary is not part of the next step (a batch step ends where the next fetch
            # started: that fetch's wait belongs to the next step). Read again only when it was more than the few
            # microseconds of queuing a row (a write, the first step's announcement, the window): stepclock.py.
            self.clock.skip_probe_work(cpu is not None)

    def _rare_end(self, step, source, ident, first, work):
        """The step end's rarer duties: another thread, the probe's own work, the first step, the model record.
        Returns (work, whether the model's input was seen on another thread: an evaluator's calls, not this step's)."""
        foreign_input = self.root_watch.root_thread not in (None, ident)
        if self.thread != ident:
            self._set_thread(ident)
        if self.fault == "step" and step == 2:
            raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=step")
        self.next_step_work = None
        bg = self.background
        if bg.busy is not None or bg.jobs_done != self.jobs_seen:
            self.jobs_seen = bg.jobs_done
            work = work or "export"
        if first:
            self.life.announce()
            bg.ensure()
        if self.model.sent != "step":
            self.model.send("step")  # also after a time window's record: the training's optimizer and model now
            if source == "batch":
                self.mark_next_step("model")  # the next step began at this fetch: the search is in it
        return work, foreign_input

    def _keep_times(self, step_time, wait_s):
        times, waits = self.host_step_times, self.wait_times
        times.append(step_time)
        waits.append(wait_s)
        if len(times) > 2 * STEADY_WINDOW:
            del times[0]
            del waits[0]

    def _after_step(self, source, batch_source):
        """What follows a step's record: the model's next input watched, the GPU history stopped where asked, the
        profiler window's boundary. True when the history was stopped (probe work at the boundary)."""
        if batch_source == "model-input" or (self.batch_calls == 0 and self.root_watch.root_ref is not None):
            self.root_watch.arm(persistent=source == "forward")
        gpu = self.gpu
        history_stopped = gpu is not None and gpu.history_stop_pending
        if history_stopped:
            # The window's snapshot was taken (background run): the thread that started the history stops it. Left
            # on, it records a stack at every allocation: +50% on a ResNet-50 step (H200, measured).
            gpu.stop_history_if_pending()
        window = self.window
        if window.prof is not None or not window.done:
            window.at_step_end(self.step)
        if self.backward_until_window and window.done:
            self.backward_until_window = False
            self.patches.restore("backward")
        return history_stopped

    # ---------- between bursts (sampling.py) ----------

    def _may_go_quiet(self):
        """Whether the loop may be only counted: an optimizer marks the steps, the window is over, nothing of the
        probe's is pending and no fault is injected."""
        window = self.window
        if self.source != "optimizer" or window.prof is not None or not window.done or self.fault or window.time_pending():
            return False
        return self.next_step_work is None and self.background.busy is None and self.primary_optimizer is not None

    def leave_quiet(self, ident):
        """The next step is recorded in full: it starts now."""
        now = _perf_counter()
        self.sampler.end_quiet()
        self.last_activity = now
        self.clock.resume(now, ident)
        self.batch.reset()
        if self.life.cuda_on:
            self.gpu.mark_boundary()  # the GPU's time of the next step, not of the steps counted since the last burst
        if self.batch_calls == 0 and self.root_watch.root_ref is not None:
            self.root_watch.arm(persistent=False)  # the model's input is the batch: read the next step's

    def after_fork(self):
        """In a forked child: every step of its own is seen until it settles."""
        self.sampler.after_fork()
