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
and written every few milliseconds (records.py). The thread's CPU clock is a system call, and in a real loop on the
2-core VM one read cost about 18 us of the step (the call and the caches it leaves cold: +36 us a step of 72 with a read
at every boundary, +14 without), so after the first CPU_EVERY_STEP steps it is read around one step in CPU_SAMPLE_EVERY:
that step's record has `hostCpuS`, the others null (a median over a steady loop's samples is the same).

The steady loop is sampled. After the first `GPUWISE_FULL_STEPS` steps (2048, what doctor keeps of a run's head), once
the profiler window is done and an optimizer marks the steps, a step is recorded in full only in bursts: the steps
whose number modulo SAMPLE_PERIOD is below SAMPLE_BURST (the same steps on every rank). Between bursts a step costs the
hooks a counter and the beacon's store: no clock, no record, no CUDA event. The DataLoader's `__next__` is not watched
then (`_pause_batches`): its batches, for the `loader` record, are read off the iterator's own count at each optimizer
step; a new epoch or another loader's iterator ends the pause. Where sys.monitoring watches `torch.autograd.backward`
(Python >= 3.12) it is paused too: between bursts the optimizer's step is the progress the watchdog reads, and its hook
the only one a step runs. doctor keeps a spread sample of a long run's steps
anyway (src/doctor/recordSample.ts), and a burst of consecutive steps keeps what a stall pattern needs. Measured on an
H200 host, every step recorded cost +54 to +90 us a step at 1 ms steps, a counted step +5.5 to +11: bursts of 32 in 1024
keep the mix at 0.65-1.05% of a 1.2 ms step there (bench/doctor/results/h200-2026-11-29-sampled-final.txt).
"""
import sys
import threading
import time
import weakref

from . import safe
from .threads import native_id
from .window import STEADY_WINDOW

# Gradient accumulation over more micro-batches than this is rare; a loop that fetched this many
# batches (or ran this many backward passes) without any optimizer step is taken to have none.
FALLBACK_AFTER = 64
# Step sources by precedence: a source counts steps until a higher one shows up.
SOURCE_RANK = {"graph": 0, "forward": 1, "backward": 2, "batch": 3, "optimizer": 4, "marker": 5}
# Replays of the first CUDA graph with no step of a higher source between them: the graph is the loop.
GRAPH_TAKEOVER = 8
# DataLoader batches without token ids after which the probe stops looking for them.
TOKENS_AFTER = 8
# The host's CPU time is measured for every one of the first CPU_EVERY_STEP steps, then for one step in CPU_SAMPLE_EVERY.
CPU_EVERY_STEP = 64
CPU_SAMPLE_EVERY = 16
# Past the full head, the steps recorded: those whose number modulo SAMPLE_PERIOD is below SAMPLE_BURST (1 in 32).
SAMPLE_BURST = 32
SAMPLE_PERIOD = 1024


def cpu_read_at(step):
    """Whether the CPU clock is read at the end of step `step`: the boundaries that start and end a sampled step."""
    return step < CPU_EVERY_STEP or (step + 1) % CPU_SAMPLE_EVERY < 2

_get_ident = threading.get_ident
_thread_time = time.thread_time


def _yielded(it):
    """A DataLoader iterator's count of batches returned (`_num_yielded`, off its instance dict), None if unknown."""
    d = safe.instance_dict(it)
    n = d.get("_num_yielded") if d is not None else None
    return n if type(n) is int else None


class StepsMixin(object):
    def _admits(self, source, ident):
        """Whether an event of `source` on thread `ident` counts (see the module docstring)."""
        t = self.step_thread
        if t is None or t == ident:
            return True
        return self.step_source is None or SOURCE_RANK[source] > SOURCE_RANK[self.step_source]

    def _set_step_thread(self, ident):
        """On the thread `ident` itself (every caller is its hook)."""
        if self.step_thread != ident:
            self.step_thread = ident
            self.root_watch.set_thread(ident)
            self.thread_cpu.stepping_tid = native_id()

    def _on_batch(self, t0, wait_s, batch, ident, it=None):
        if it is not None:
            self.loader_watch.on_batch(it, t0 + wait_s)  # every loader's batches, whichever thread iterates it
        if self.burst_at is not None:
            self.batch_calls += 1  # between bursts: progress for the watchdog, nothing more
            return
        if self.step_thread not in (None, ident) and not self._admits("batch", ident):
            return
        if it is not None and id(it) != self.feed_id:
            self._feed_from(it)
        self.last_activity = t0
        if self.prof is not None:
            self._close_if_overdue(t0)
        if self.last_boundary is None:
            self.last_boundary = t0  # the loop starts with its first batch
            self.last_cpu = _thread_time()
            self.cpu_thread = ident
            self._set_step_thread(ident)
            self._starts_training()
        self.batch_calls += 1
        if self.root_watch.armed is not None:
            # A DataLoader feeds the steps (batches outrank forwards): the model's calls are not needed.
            self.root_watch.persistent = False
            self.root_watch.disarm()
        if self.cfg.fault == "batch" and self.batch_calls == 2:
            raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=batch")
        if self._takes_over("batch") and self.step_source != "batch" and self.batch_calls > 1 and (not self.optimizer_built or self.batch_calls > FALLBACK_AFTER):
            self.step_source = "batch"
        if self.step_source == "batch" and self.batches > 0:
            # The previous batch's step ends where this fetch starts (its wait belongs to the next step).
            self._end_step(t0, "batch", ident)
        self.data_wait_s += wait_s
        self.batches += 1
        if not self.samples_known and not self.tokens_known:
            return
        reader = self.batch_reader
        if not reader.readable():
            self.samples_known = self.tokens_known = False
            return
        n = reader.size(batch)
        if n is None:
            self.samples_known = False
        else:
            self.samples += n
        # Token ids are looked for until TOKENS_AFTER batches have shown none (a loader's batches keep their structure).
        tok = reader.tokens(batch) if self.batches_without_tokens < TOKENS_AFTER else None
        if tok is None:
            self.tokens_known = False
            self.batches_without_tokens += 1
        else:
            self.tokens += tok[0]
            self.seq_len = tok[1]
            self.batches_without_tokens = 0

    def _takes_over(self, source):
        """Whether `source` may count steps now: no higher source is counting them."""
        return self.step_source is None or SOURCE_RANK[source] >= SOURCE_RANK[self.step_source]

    def _on_backward(self, ident, t0, ended=True):
        """A backward pass called at `t0` (perf_counter) returned (`ended`): its call's wall time is the step's
        `backwardS`. Where only its start is seen (`ended` False: Python < 3.12, patches.py) it counts from there, and
        its wall time comes from the engine's callback at its end (`backward_spans`). Never between bursts: the
        backward is not watched then, or its wrapper returns at once (`_enter_quiet`)."""
        if not self._admits("backward", ident):
            return
        now = time.perf_counter() if ended else t0
        self.last_activity = now
        self.backward_calls += 1
        if ended:
            self.backward_s += now - t0
        watch = self.root_watch
        watch.reset_depth()  # a forward that raised left its depth behind: a backward ends it
        if self.prof is not None:
            self._close_if_overdue(now)
        if self.batch_calls == 0:
            # The batch is the model's input: each micro-batch's forward must be seen. One without its forward seen
            # (an evaluation call before it disarmed the watch) leaves the step's samples unknown.
            if self.forwards_since_backward == 0 and self.input_forwards > 0:
                self.input_samples_known = self.input_tokens_known = False
            self.forwards_since_backward = 0
            watch.arm()
        if not self._takes_over("backward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.backward_calls <= FALLBACK_AFTER:
            return  # an optimizer exists: give it the chance to step (gradient accumulation)
        if self.step_source in (None, "forward", "graph"):
            if self.last_boundary is None or self.step_source in ("forward", "graph"):
                # The first backward ends no step: the clock starts here (a whole step lies between two).
                self._start_clock(now, "backward", ident)
                return
        self._end_step(now, "backward", ident)

    def _forward_step(self, now, ident):
        # Forward calls are the steps only for loops with nothing better: no batches, no backward.
        if self.batch_calls or self.backward_calls or not self._takes_over("forward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.forward_calls <= FALLBACK_AFTER:
            return
        if self.step_source == "graph" and self.graph_loop and self.last_boundary is not None:
            # A generation loop whose decoding forward is a graph: the last replay's step ends at the next prompt's
            # forward, which starts a step of its own (its input read), ended by the first replay after it.
            self._end_step(now, "graph", ident)
            self.step_source = "forward"
            self.replays_since_other = 0
            # Each prompt's decoding may replay a graph of its own (cudagraph trees record again for a new cache's
            # addresses: a static-cache generate() at batch 8 on an H200 counted only its first call's replays): the
            # first replay after the prompt names the graph that marks the steps.
            self.primary_graph = None
            return
        if self.step_source in (None, "graph"):
            self._start_clock(now, "forward", ident)  # the step runs from one forward's start to the next's
            return
        self._end_step(now, "forward", ident)

    def _optimizer_hook(self, optimizer, args=None, kwargs=None):
        """Every optimizer step: whichever hook torch offers calls it (patches.py), and torch 2's global post-step hook
        is this method itself (`args` and `kwargs` the step's). Between bursts the step is counted here, in this one
        frame: the calls a recorded step goes through (a lambda, `_guarded`, `_on_optimizer_step`) were half of a
        counted step's hooks (on the VM, `opt.step()` timed counting against switched off: +0.6 us before, +0.3 us)."""
        if self.disabled:
            return
        ident = _get_ident()
        if self.burst_at is None:
            self._guarded(self._on_optimizer_step, optimizer, ident)
            return
        if ident != self.step_thread:
            return  # another thread's optimizer: not the steps the optimizer counts (`_admits`)
        try:
            if self.primary_optimizer() is not optimizer:
                return
            step = self.step = self.step + 1
            self.beacon.set(step)
            if self.batches_paused:
                it = self.feed[0]()
                n = _yielded(it) if it is not None else None
                if n is not None:  # the batches so far, for the loader record (loader.py)
                    self.feed[1].batches_pending = max(0, n - self.feed_mark)
            if step >= self.burst_at:
                self._leave_quiet(ident)
        except Exception as e:
            self._fail(e)

    def _on_optimizer_step(self, optimizer, ident):
        if self.step_thread not in (None, ident) and not self._admits("optimizer", ident):
            return
        now = time.perf_counter()
        self.last_activity = now
        first = not self.optimizer_stepped
        self.optimizer_stepped = True
        if self.step_source == "marker":
            return  # the script marks its steps itself
        # An optimizer step overrides the batch fallback: the batches before were not training
        # (a pass over the data before the optimizer existed), so their step count ends here.
        if self.primary_optimizer is None:
            self.primary_optimizer = weakref.ref(optimizer)
        elif self.primary_optimizer() is not optimizer:
            return  # several optimizers (e.g. a GAN): the first one's steps mark the steps
        self._end_step(now, "optimizer", ident)
        if first:
            self._optimizer_steps()

    def _on_marker(self, ident):
        if not self._admits("marker", ident):
            return
        if self.burst_at is not None:
            self._leave_quiet(ident)  # the script marks its steps from here: they outrank the optimizer's
        now = time.perf_counter()
        self.last_activity = now
        if self.step_source != "marker":
            # Any other source that started the clock (a backward pass, a forward) did so mid-step.
            restart = self.step_source is not None
            self.step_source = "marker"
            if self.last_boundary is None or restart:
                # The first mark starts the first marked step: no DataLoader started the clock, or the
                # steps so far came from another source (their last one ended elsewhere).
                self._start_clock(now, "marker", ident)
                return
        self._end_step(now, "marker", ident)

    def _on_graph_replay(self, graph, ident):
        if self.burst_at is not None or not self._admits("graph", ident):
            return
        now = time.perf_counter()
        self.last_activity = now
        self.graph_replays += 1
        if self.primary_graph is None:
            self.primary_graph = weakref.ref(graph)
        elif self.primary_graph() is not graph:
            return  # several graphs a step (forward and backward graphs): the first one's replays mark the steps
        if self.step_source == "graph":
            self._end_step(now, "graph", ident)
            return
        self.replays_since_other += 1
        if self.step_source is None:
            if self.optimizer_built and not self.optimizer_stepped and self.graph_replays <= FALLBACK_AFTER:
                return
            self._start_clock(now, "graph", ident)
            self.graph_loop = True
        elif self.step_source == "forward" and self.graph_loop and self.replays_since_other == 1:
            # The prompt's forward (eager, before a captured decoding forward) ends at the first replay after it: its
            # step is the time to the first token, and the replays after it are the decode steps.
            self._end_step(now, "forward", ident)
            self.step_source = "graph"
        elif self.replays_since_other >= GRAPH_TAKEOVER:
            # The higher source fell silent while the graph kept replaying: the whole step was captured in it.
            self._start_clock(now, "graph", ident)
            self.graph_loop = True

    def _start_clock(self, now, source, ident):
        """`source` starts counting: what was seen before belongs to no step."""
        self.step_source = source
        self.last_boundary = now
        self.last_cpu = _thread_time()
        self.cpu_thread = ident
        self._set_step_thread(ident)
        self._reset_step_counters()
        self._starts_training()

    def _reset_step_counters(self):
        """The current step's counts: the DataLoader's waits and batches, and the batches the model's input showed."""
        self.data_wait_s = 0.0
        self.batches = 0
        self.samples = 0
        self.samples_known = True
        self.tokens = 0
        self.tokens_known = True
        self.seq_len = None
        self.input_samples = 0
        self.input_samples_known = True
        self.input_tokens = 0
        self.input_tokens_known = True
        self.input_seq_len = None
        self.input_forwards = 0
        self.forwards_since_backward = 0
        self.backward_s = 0.0
        self.last_step_mixed, self.step_mixed = self.step_mixed, False

    def _quiet_if_due(self, step):
        """After step `step` ended in full: whether the steps up to the next burst are only counted (the module
        docstring). The first test is all a step inside a burst pays."""
        nxt = step + 1
        full = self.cfg.full_steps
        if nxt % SAMPLE_PERIOD < SAMPLE_BURST or full is None or nxt < full:
            return
        if self.step_source != "optimizer" or self.prof is not None or not self.window_done or self.cfg.fault:
            return
        if self.time_armed_at is not None and self.time_state != "done":
            return
        if self.next_step_work is not None or self.background.busy is not None or self.primary_optimizer is None:
            return
        burst_at = nxt - nxt % SAMPLE_PERIOD + SAMPLE_PERIOD - 1  # the quiet step whose end starts the next burst
        if self.cfg.max_steps is not None:
            burst_at = min(burst_at, self.cfg.max_steps - 1)  # the last step ends in full (--steps)
        if burst_at > step:
            self._enter_quiet(burst_at)

    def _enter_quiet(self, burst_at):
        """The steps up to `burst_at` are only counted: the DataLoader's `__next__` and the backward pass unwatched (a
        wrapper, on Python < 3.12, returns at once); the optimizer's step is the progress the watchdog reads."""
        self.burst_at = burst_at
        self._pause_batches()
        if self.backward_code is not None:
            self.calls.pause(self.backward_code)

    def _feed_from(self, it):
        """Iterator `it` hands the stepping thread its batches now: the one whose count the loop reads between bursts.
        A second iterator within one step (zipped loaders; an evaluation's before the next epoch's) marks the step
        mixed, and a loop is paused only after a step that was not."""
        if self.batches > 0:
            self.step_mixed = True
        self.feed_id = id(it)
        state = self.loader_watch.state_of(it)
        try:
            ok = state is not None and _yielded(it) is not None
            self.feed = (weakref.ref(it), state) if ok else None
        except TypeError:
            self.feed = None

    def _pause_batches(self):
        """Between bursts the DataLoader's `__next__` is not watched (sys.monitoring's calls cost a counted step most
        of its +21 us on an H200 host; a wrapper returns at once): the loader's batches are read off its iterator's
        own count (`_num_yielded`) at each optimizer step. Only for the one iterator the steps take their batches from."""
        feed = self.feed
        it = feed[0]() if feed is not None and not self.last_step_mixed else None
        if it is None:
            return
        n = _yielded(it)
        if n is None or (self.next_code is not None and not self.calls.pause(self.next_code)):
            return
        self.feed_mark = n
        feed[1].batches_pending = 0
        self.batches_paused = True

    def _resume_batches(self):
        self.batches_paused = False
        if self.next_code is not None:
            self.calls.resume(self.next_code)
        state = self.feed[1]
        pending, state.batches_pending = state.batches_pending, 0
        state.batches += pending

    def _end_quiet(self):
        """Every step is watched again (`_enter_quiet` undone)."""
        self.burst_at = None
        if self.batches_paused:
            self._resume_batches()
        if self.backward_code is not None:
            self.calls.resume(self.backward_code)

    def _leave_quiet(self, ident):
        """The next step is recorded in full: it starts now."""
        now = time.perf_counter()
        self._end_quiet()
        self.last_activity = self.last_boundary = now
        self.last_cpu = None  # no CPU time for this first step: its start was not read
        self.cpu_thread = ident
        self._reset_step_counters()
        if self.cuda_on:
            self.gpu.mark_boundary()  # the GPU's time of the next step, not of the steps counted since the last burst
        if self.batch_calls == 0 and self.root_watch.root_ref is not None:
            self.root_watch.arm(persistent=False)  # the model's input is the batch: read the next step's

    def mark_next_step(self, work):
        """The probe did work of its own (`work`) that the next step ends up carrying: its record says so."""
        if self.next_step_work is None:
            self.next_step_work = work

    def _end_step(self, now, source, ident):
        """A step ends: its record queued. The common path is a few attribute reads, two clock reads and a tuple; the
        rest (the first step, the window, the probe's own work, another thread) only when `rare` says so."""
        self.step_source = source
        step = self.step = self.step + 1
        self.beacon.set(step)  # survives a SIGKILL that takes the queued records (beacon.py)
        last = self.last_boundary
        step_time = None if last is None else now - last
        cpu = _thread_time() if cpu_read_at(step) else None
        # Only a delta on one thread is its CPU time (a step ended on another thread has none).
        host_cpu = None if cpu is None or self.last_cpu is None or self.cpu_thread != ident else max(0.0, cpu - self.last_cpu)
        work = self.next_step_work
        bg = self.background
        first = not self.announced
        spans = self.backward_spans
        if spans:  # the backward passes that ended since (patches.py: seen from their start), from the engine's thread
            n = len(spans)
            self.backward_s += sum(t1 - t0 for t0, t1 in spans[:n])
            del spans[:n]
        foreign_input = False
        if source != "graph":
            self.replays_since_other = 0
        rare = first or work is not None or self.step_thread != ident or self.model_sent != "step" or self.cfg.fault or bg.busy is not None or bg.jobs_done != self.jobs_seen
        if rare:
            # The model's input seen on another thread than this one (an evaluator's calls) is not this step's batch.
            foreign_input = self.root_watch.root_thread not in (None, ident)
            if self.step_thread != ident:
                self._set_step_thread(ident)
            if self.cfg.fault == "step" and step == 2:
                raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=step")
            self.next_step_work = None
            if bg.busy is not None or bg.jobs_done != self.jobs_seen:
                self.jobs_seen = bg.jobs_done
                work = work or "export"
            if first:
                self._announce()
                bg.ensure()
            if self.model_sent != "step":
                self._send_model("step")  # also after a time window's record: the training's optimizer and model now
                if source == "batch":
                    self.mark_next_step("model")  # the next step began at this fetch: the search is in it
        # The batch: the DataLoader's when one fed this step, else the outermost module's input.
        samples = tokens = seq_len = batch_source = forwards = None
        if self.batches > 0:
            batch_source = "dataloader"
            samples = self.samples if self.samples_known else None
            if self.tokens_known:
                tokens, seq_len = self.tokens, self.seq_len
        elif self.input_forwards > 0:
            batch_source = "model-input"
            forwards = self.input_forwards  # the micro-batches: samples are summed over them
            if not foreign_input:
                samples = self.input_samples if self.input_samples_known else None
                if self.input_tokens_known:
                    tokens, seq_len = self.input_tokens, self.input_seq_len
        if step_time is not None:
            times, waits = self.host_step_times, self.wait_times
            times.append(step_time)
            waits.append(self.data_wait_s)
            if len(times) > 2 * STEADY_WINDOW:
                del times[0]
                del waits[0]
        max_steps = self.cfg.max_steps
        last_step = max_steps is not None and step >= max_steps
        cuda = self.cuda_on
        # A step row (records.py, _STEP_LINE's order): a tuple, formatted when the queue is written.
        wrote = self.sender.put(
            (
                self.protocol,
                self.pid,
                self.cfg.rank,
                time.time(),
                self.gpu.step_times(step) if cuda else (),
                step,
                step_time,
                host_cpu,
                self.data_wait_s,
                self.batches,
                forwards,
                samples,
                tokens,
                seq_len,
                batch_source,
                source,
                self.gpu.memory(now, force=last_step or first) if cuda else None,
                self.prof is not None and self.window_kind == "steps",
                work,
                self.backward_s if self.backward_s > 0 else None,
            ),
            now=first,
        )
        self.last_boundary = now
        self.last_cpu = cpu
        self.cpu_thread = ident
        self._reset_step_counters()
        if batch_source == "model-input" or (self.batch_calls == 0 and self.root_watch.root_ref is not None):
            self.root_watch.arm(persistent=source == "forward")
        history_stopped = self.gpu is not None and self.gpu.history_stop_pending
        if history_stopped:
            # The window's snapshot was taken (background run): the thread that started the history stops it. Left
            # on, it records a stack at every allocation: +50% on a ResNet-50 step (H200, measured).
            self.gpu.stop_history_if_pending()
        if self.prof is not None or not self.window_done:
            self._profiler_boundary()
        if self.backward_until_window and self.window_done:
            self.backward_until_window = False
            self.patches.restore("backward")
        if last_step:
            self._stop_profiler("steps")
            bg.wait_jobs(60.0)
            self._end("max-steps")
            sys.stderr.write("gpuwise probe: stopping after %d steps (--steps)\n" % step)
            sys.stderr.flush()
            raise SystemExit(0)
        self._quiet_if_due(step)
        inline = bg.ticker is None and (bg.jobs or now >= bg.inline_at) and bg.run_inline(now)  # no timer: due work
        if source != "batch" and (wrote or rare or inline or self.prof is not None or not self.window_done or history_stopped):
            # The probe's own work at the boundary is not part of the next step. (A batch step
            # ends where the next fetch started: that fetch's wait belongs to the next step.) The thread's CPU clock is
            # a system call (see the module docstring): both clocks are read again only when the probe's work here
            # was more than the few microseconds of queuing a row (a write of the queue, the first step's
            # announcement, the window); else the next step carries those microseconds in both.
            self.last_boundary = time.perf_counter()
            if cpu is not None:
                self.last_cpu = _thread_time()
