"""The model as the steps see it: the outermost module's calls (found and watched by model.py's RootWatch), the batch read
off its input when no DataLoader feeds the steps, its grad modes and autocast, and the `model` record."""
import time
import weakref

from . import hooks, safe
from .batch import batch_dim_of
from .model import RootWatch
from .modelrecord import autocast_in_force, model_record

_perf_counter = time.perf_counter


class ModelWatch(object):
    """Made at torch's import. `life` (core.py): `guarded()`, `starts_training()`, `sender`'s records."""

    def __init__(self, torch, steps, reader, calls, patches, sender, life):
        self.torch = torch
        self.steps = steps
        self.reader = reader
        self.patches = patches
        self.sender = sender
        self.life = life
        self.inference_mode_on = getattr(torch, "is_inference_mode_enabled", None)  # torch >= 1.9; read per forward
        self.grad_modes = [0, 0, 0]  # the outermost module's forwards: with gradients, under no_grad, inference_mode
        self.autocast_dtype = None
        self.batch_dim = None  # (dimension, evidence) once the root is known
        self.root_input_shape = None
        self.seq_module = None
        self.sent = None  # the model record: None, "time" (with the time window), "step" (at the first step)
        self.listeners = []  # called with the training model once it is found (`tune --plan`'s trial only)
        self.root_watch = RootWatch(
            torch,
            lambda module: life.guarded(self._on_discovered, module),
            lambda args, kwargs, ident: life.guarded(self._on_root_forward, args, kwargs, ident),
            calls,
        )

    def root(self):
        return self.root_watch.root()

    def on_discovered(self, listener):
        """Calls `listener(module)` once the training model is found (after the probe's own reading of it)."""
        self.listeners.append(listener)

    def _on_discovered(self, module):
        self.life.starts_training()
        dim, evidence, seq_module = batch_dim_of(module)
        self.batch_dim = (dim, evidence)
        self.seq_module = weakref.ref(seq_module) if seq_module is not None and seq_module is not module else None
        if self.steps.forwards_may_be_steps():
            self.root_watch.arm(persistent=True)  # forwards may be the steps: each one is seen until a backward
        for listener in self.listeners:
            listener(module)

    def _on_root_forward(self, args, kwargs, ident):
        torch, steps = self.torch, self.steps
        now = _perf_counter()
        steps.forward_seen(now)
        self._count_grad_mode()
        if self.autocast_dtype is None:
            self.autocast_dtype = autocast_in_force(torch)
        steps.forward_step(now, ident)  # a forward that starts a step ends the one before, before its batch counts
        if steps.source not in (None, "forward") and not torch.is_grad_enabled():
            # An evaluation call between training steps is not the step's work; the watch stays armed for the next
            # training forward (the evaluation's module calls pay for that, not the training's).
            if not self.root_watch.persistent:
                self.root_watch.arm()
            return
        # Samples of the training forwards only when steps are training steps; every forward when forwards are steps.
        batch = steps.batch
        batch.forwards_since_backward += 1
        reader = self.reader
        if not reader.readable():
            batch.unreadable_input()
            return
        first = reader.first_argument(args, kwargs)
        if self.root_input_shape is None and first is not None:
            self.root_input_shape = tuple(first.shape)
            self._check_batch_dim()
        # A sequence-first model's input is [seq, batch, ...]: the batch is its second dimension.
        bd = self.batch_dim[0] if self.batch_dim is not None else 0
        dim = bd if first is not None and len(first.shape) > bd else 0
        n = reader.size(first, dim)
        ids = safe.get(kwargs, "input_ids")
        batch.model_input(n, reader.tokens(first if ids is None else ids, dim))

    def _count_grad_mode(self):
        modes, inference_on = self.grad_modes, self.inference_mode_on
        if inference_on is not None and inference_on():
            modes[2] += 1
        elif self.torch.is_grad_enabled():
            modes[0] += 1
        else:
            modes[1] += 1

    def _check_batch_dim(self):
        """A sequence-first module inside the model may get the model's input transposed (the model turned its
        [batch, seq] input around before it): its first call, read through one global pre-hook, tells."""
        seq = self.seq_module() if self.seq_module is not None else None
        if seq is None or self.root_watch.instance is not None:
            return  # (a compiled model's modules run inside compiled code: the flag stands)
        handles = []
        torch, reader, life = self.torch, self.reader, self.life

        def on_call(mod, args):
            if mod is not seq or not reader.readable() or getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)():
                return None
            for h in handles:
                h.remove()  # torch iterates over a copy of the hooks: removing inside one is safe
            del handles[:]
            life.guarded(self._confirm_batch_dim, args)
            return None

        h = hooks.global_forward_pre_hook(torch, on_call)
        if h is not None:
            handles.append(h)
            self.patches.add_undo("batch-dim-check", lambda: [h.remove() for h in handles])

    def _confirm_batch_dim(self, args):
        x = self.reader.first_argument(args, {})
        r = self.root_input_shape
        if x is None or r is None or len(x.shape) < 2 or len(r) < 2 or r[0] == r[1]:
            return  # nothing to compare, or a square input: the flag stands
        if x.shape[1] == r[0]:
            # Its batch (dimension 1) is the model input's dimension 0: the model transposed a batch-first input.
            self.batch_dim = (0, "%s, fed the input's dimension 0 as its batch (transposed inside the model)" % self.batch_dim[1])

    def send(self, when):
        """The `model` record: `when` is "step" (the first step) or "time" (the time window, only once a model is found)."""
        root = self.root()
        summary = model_record(self.torch, self.steps.optimizer(), root, self.autocast_dtype, self.batch_dim if root is not None else None)
        if when == "time" and not summary["found"]:
            return  # a loop of functions: no model to describe (yet)
        self.sent = when
        self.sender.put_record("model", summary)
