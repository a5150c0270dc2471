"""Steps: which source marks them (optimizer, gpuwise.step(), DataLoader batches, backward passes, forwards of the
outermost module, CUDA graph replays), where each ends, and the step record."""
import sys
import threading
import time
import weakref

from .batch import _batch_size, _batch_tokens
from .window import STEADY_WINDOW

# Gradient accumulation over more micro-batches than this is rare; a loop that fetched this many
# batches (or ran this many backward passes) without any optimizer step is taken to have none.
FALLBACK_AFTER = 64
# Step sources by precedence: a source counts steps until a higher one shows up.
SOURCE_RANK = {"graph": 0, "forward": 1, "backward": 2, "batch": 3, "optimizer": 4, "marker": 5}
# Replays of the first CUDA graph with no step of a higher source between them: the graph is the loop.
GRAPH_TAKEOVER = 8


def _thread_cpu():
    """(thread id, CPU seconds of the calling thread): a syscall of about a microsecond, no GPU work; None if unknown."""
    try:
        return (threading.get_ident(), time.thread_time())
    except Exception:  # a platform without a per-thread CPU clock
        return None



class StepsMixin(object):
    def _on_batch(self, t0, wait_s, batch):
        self.last_activity = t0
        if self.last_boundary is None:
            self.last_boundary = t0  # the loop starts with its first batch
            self.last_cpu = _thread_cpu()
            self._ensure_watchdog()
        self.batch_calls += 1
        if self.fault == "batch" and self.batch_calls == 2:
            raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=batch")
        if self._takes_over("batch") and self.step_source != "batch" and self.batch_calls > 1 and (not self.optimizer_built or self.batch_calls > FALLBACK_AFTER):
            self.step_source = "batch"
        if self.step_source == "batch" and self.batches > 0:
            # The previous batch's step ends where this fetch starts (its wait belongs to the next step).
            self._end_step(t0, "batch")
        self.data_wait_s += wait_s
        self.batches += 1
        n = _batch_size(self.torch, batch)
        if n is None:
            self.samples_known = False
        else:
            self.samples += n
        tok = _batch_tokens(self.torch, batch)
        if tok is None:
            self.tokens_known = False
        else:
            self.tokens += tok[0]
            self.seq_len = tok[1]

    def _takes_over(self, source):
        """Whether `source` may count steps now: no higher source is counting them."""
        return self.step_source is None or SOURCE_RANK[source] >= SOURCE_RANK[self.step_source]

    def _on_backward(self):
        now = time.perf_counter()
        self.last_activity = now
        self.backward_calls += 1
        self.root_depth = 0  # a forward that raised left the watch's depth behind: a backward ends it
        if not self._takes_over("backward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.backward_calls <= FALLBACK_AFTER:
            return  # an optimizer exists: give it the chance to step (gradient accumulation)
        if self.step_source in (None, "forward", "graph"):
            if self.last_boundary is None or self.step_source in ("forward", "graph"):
                # The first backward ends no step: the clock starts here (a whole step lies between two).
                self._start_clock(now, "backward")
                return
        self._end_step(now, "backward")

    def _forward_step(self, now):
        # Forward calls are the steps only for loops with nothing better: no batches, no backward.
        if self.batch_calls or self.backward_calls or not self._takes_over("forward"):
            return
        if self.optimizer_built and not self.optimizer_stepped and self.forward_calls <= FALLBACK_AFTER:
            return
        if self.step_source in (None, "graph"):
            self._start_clock(now, "forward")  # the step runs from one forward's start to the next's
            return
        self._end_step(now, "forward")

    def _on_optimizer_step(self, optimizer):
        now = time.perf_counter()
        self.last_activity = now
        self.optimizer_stepped = True
        if self.step_source == "marker":
            return  # the script marks its steps itself
        # An optimizer step overrides the batch fallback: the batches before were not training
        # (a pass over the data before the optimizer existed), so their step count ends here.
        if self.primary_optimizer is None:
            self.primary_optimizer = weakref.ref(optimizer)
        elif self.primary_optimizer() is not optimizer:
            return  # several optimizers (e.g. a GAN): the first one's steps mark the steps
        self._end_step(now, "optimizer")

    def _on_marker(self):
        now = time.perf_counter()
        self.last_activity = now
        if self.step_source != "marker":
            # Any other source that started the clock (a backward pass, a forward) did so mid-step.
            restart = self.step_source is not None
            self.step_source = "marker"
            if self.last_boundary is None or restart:
                # The first mark starts the first marked step: no DataLoader started the clock, or the
                # steps so far came from another source (their last one ended elsewhere).
                self._start_clock(now, "marker")
                return
        self._end_step(now, "marker")

    def _start_clock(self, now, source):
        """`source` starts counting: what was seen before belongs to no step."""
        self.step_source = source
        self.last_boundary = now
        self.last_cpu = _thread_cpu()
        self._reset_step_counters()
        self._ensure_watchdog()

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

    def _end_step(self, now, source):
        self.step_source = source
        if source != "graph":
            self.replays_since_other = 0
        self.step += 1
        step_time = None if self.last_boundary is None else now - self.last_boundary
        cpu = _thread_cpu()
        # Only a delta on one thread is its CPU time (a step ended on another thread has none).
        host_cpu = None if cpu is None or self.last_cpu is None or cpu[0] != self.last_cpu[0] else max(0.0, cpu[1] - self.last_cpu[1])
        if self.fault == "step" and self.step == 2:
            raise RuntimeError("fault injected by GPUWISE_PROBE_FAULT=step")
        if not self.announced:
            self._announce()
        if self.watchdog is None:
            self._ensure_watchdog()  # from the first step: a stall is no progress after training began
        if self.model_sent != "step":
            self._send_model("step")  # also after a time window's record: the training's optimizer and model now
        # The batch: the DataLoader's when one fed this step, else the outermost module's input.
        samples = tokens = seq_len = batch_source = None
        if self.batches > 0:
            batch_source = "dataloader"
            samples = self.samples if self.samples_known else None
            tokens = self.tokens if self.tokens_known else None
            seq_len = self.seq_len if self.tokens_known else None
        elif self.input_forwards > 0:
            batch_source = "model-input"
            samples = self.input_samples if self.input_samples_known else None
            tokens = self.input_tokens if self.input_tokens_known else None
            seq_len = self.input_seq_len if self.input_tokens_known else None
        if step_time is not None:
            self.host_step_times.append(step_time)
            self.wait_times.append(self.data_wait_s)
            del self.host_step_times[: -2 * STEADY_WINDOW]
            del self.wait_times[: -2 * STEADY_WINDOW]
        gpu_times = self._gpu_step_times()
        self._send(
            "step",
            {
                "gpuStepTimes": gpu_times,
                "step": self.step,
                "stepTimeS": step_time,
                "hostCpuS": host_cpu,
                "dataWaitS": self.data_wait_s,
                "batches": self.batches,
                "samples": samples,
                "tokens": tokens,
                "seqLen": seq_len,
                "batchSource": batch_source,
                "stepSource": source,
                "memory": self._memory_stats(),
                "profiled": self.prof is not None,
            },
        )
        self.last_boundary = now
        self.last_cpu = cpu
        self._reset_step_counters()
        self._profiler_boundary()
        if self.max_steps is not None and self.step >= self.max_steps:
            self._stop_profiler(export=True)
            self._end("max-steps")
            sys.stderr.write("gpuwise probe: stopping after %d steps (--steps)\n" % self.step)
            sys.stderr.flush()
            raise SystemExit(0)
        if source != "batch":
            # The probe's own work at the boundary is not part of the next step. (A batch step
            # ends where the next fetch started: that fetch's wait belongs to the next step.)
            self.last_boundary = time.perf_counter()
            self.last_cpu = _thread_cpu()

    def _on_graph_replay(self, graph):
        now = time.perf_counter()
        self.last_activity = now
        self.graph_replays += 1
        if self.primary_graph is None:
            self.primary_graph = weakref.ref(graph)
        elif self.primary_graph() is not graph:
            return  # several graphs a step (forward and backward graphs): the first one's replays mark the steps
        if self.step_source == "graph":
            self._end_step(now, "graph")
            return
        self.replays_since_other += 1
        if self.step_source is None:
            if self.optimizer_built and not self.optimizer_stepped and self.graph_replays <= FALLBACK_AFTER:
                return
            self._start_clock(now, "graph")
        elif self.replays_since_other >= GRAPH_TAKEOVER:
            # The higher source fell silent while the graph kept replaying: the whole step was captured in it.
            self._start_clock(now, "graph")
