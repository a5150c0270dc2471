"""What the probe hooks into torch: optimizer steps, DataLoader batches, backward passes, CUDA graph replays, CUDA
initialisation, the end of the process."""
import atexit
import functools
import sys
import time


class _TorchImportHook(object):
    """A meta path finder that runs the probe's install right after `import torch` finishes."""

    def __init__(self, probe):
        self.probe = probe
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.busy:
            return None
        import importlib.util

        self.busy = True
        try:
            spec = importlib.util.find_spec("torch")
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        original = loader.exec_module
        probe = self.probe
        hook = self

        def exec_module(module):
            original(module)
            try:
                sys.meta_path.remove(hook)
            except ValueError:
                pass
            probe.on_torch_imported(module)

        loader.exec_module = exec_module
        return spec


class PatchesMixin(object):
    def on_torch_imported(self, torch):
        self._guarded(self._install, torch)

    def _install(self, torch):
        self.torch = torch
        import torch.optim
        import torch.utils.data.dataloader as dl

        probe = self
        # Steps: the global post-step hook (torch >= 2.0), else wrap each optimizer class's step.
        register = getattr(torch.optim.Optimizer, "register_optimizer_step_post_hook", None)
        if register is None:
            # torch 2.x: a function of the torch.optim.optimizer module, which torch.optim's
            # namespace does not always expose as an attribute: import it by name.
            try:
                import importlib

                register = getattr(importlib.import_module("torch.optim.optimizer"), "register_optimizer_step_post_hook", None)
            except Exception:
                register = None
        if register is not None:
            register(lambda opt, args, kwargs: probe._guarded(probe._on_optimizer_step, opt))
            self.step_hook = "optimizer-step-post-hook"
            # Only to know whether the script builds an optimizer at all (the batch fallback).
            original_init = torch.optim.Optimizer.__init__

            def __init__(self_opt, *args, **kwargs):
                probe.optimizer_built = True
                original_init(self_opt, *args, **kwargs)

            torch.optim.Optimizer.__init__ = __init__
        else:
            self._wrap_optimizer_classes(torch)
            self.step_hook = "optimizer-step-wrapper"

        # DataLoader waits: time every __next__ of a DataLoader iterator.
        original_next = dl._BaseDataLoaderIter.__next__

        def __next__(it):
            if probe.disabled:
                return original_next(it)
            t0 = time.perf_counter()
            batch = original_next(it)  # StopIteration and the loader's own errors pass unchanged
            probe._guarded(probe._on_batch, t0, time.perf_counter() - t0, batch)
            return batch

        __next__.__wrapped__ = original_next
        dl._BaseDataLoaderIter.__next__ = __next__

        # Backward passes: Tensor.backward calls torch.autograd.backward by attribute, so one wrapper sees both.
        original_backward = torch.autograd.backward

        def backward(*args, **kwargs):
            out = original_backward(*args, **kwargs)
            if not probe.disabled:
                probe._guarded(probe._on_backward)
            return out

        backward.__wrapped__ = original_backward
        torch.autograd.backward = backward
        self._watch_roots(torch)
        self._wrap_graph_replay(torch)
        self._install_time_window()
        if self.time_cpu:
            self._arm_time_window()  # test knob: any torch process counts as device work

        # CUDA: attach the OOM observer (and history) as soon as CUDA initialises.
        lazy_call = getattr(torch.cuda, "_lazy_call", None)
        if lazy_call is not None:
            lazy_call(lambda: probe._guarded(probe._on_cuda_init))

        prev_hook = sys.excepthook

        def excepthook(etype, value, tb):
            probe._guarded(probe._on_exception, etype, value)
            prev_hook(etype, value, tb)

        sys.excepthook = excepthook
        atexit.register(lambda: self._guarded(self._on_exit))

    def _wrap_optimizer_classes(self, torch):
        probe = self
        Optimizer = torch.optim.Optimizer
        original_init = Optimizer.__init__

        def __init__(self_opt, *args, **kwargs):
            probe.optimizer_built = True
            original_init(self_opt, *args, **kwargs)
            probe._guarded(probe.wrap_optimizer_step, type(self_opt))

        Optimizer.__init__ = __init__

    def wrap_optimizer_step(self, cls):
        """Wraps the `step` that instances of optimizer class `cls` run (torch < 2.0 has no global step hook); once
        per defining class, marked. Also used by the notebook for classes built before the probe existed."""
        torch = self.torch
        # The class in the MRO whose `step` runs (a user's subclass may inherit AdamW's); the base class's is abstract.
        owner = next((c for c in cls.__mro__ if "step" in c.__dict__), None)
        if owner is None or owner is torch.optim.Optimizer or owner.__dict__.get("_gpuwise_wrapped"):
            return
        step = owner.__dict__["step"]
        probe = self

        def step_wrapper(self_opt, *args, **kwargs):
            out = step(self_opt, *args, **kwargs)
            probe._guarded(probe._on_optimizer_step, self_opt)
            return out

        # Keeps torch's own markers (1.x sets `hooked` on the profiled step) and the name.
        functools.update_wrapper(step_wrapper, step)
        owner.step = step_wrapper
        owner._gpuwise_wrapped = True

    def _wrap_graph_replay(self, torch):
        """Counts `torch.cuda.CUDAGraph.replay` calls (a Python method over the C graph in every torch with graphs)."""
        cls = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
        original = getattr(cls, "replay", None)
        if cls is None or original is None or getattr(original, "_gpuwise_wrapped", False):
            return
        probe = self

        def replay(graph, *args, **kwargs):
            out = original(graph, *args, **kwargs)
            if not probe.disabled:
                probe._guarded(probe._on_graph_replay, graph)
            return out

        functools.update_wrapper(replay, original)
        replay._gpuwise_wrapped = True
        cls.replay = replay
