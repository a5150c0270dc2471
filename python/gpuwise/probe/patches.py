"""What the probe hooks into torch, each with its restore.

Every patch replaces one attribute of torch (never of a user object) and is recorded in a `Patches` registry, which
puts the original back (`restore(name)` once its use is over, `restore_all()` when the probe ends: at the exit, when
it switches itself off, in a DataLoader worker). Where torch has a global hook the probe uses it instead of a wrapper
(the optimizer step post-hook of torch >= 2.0). A wrapper keeps its original's name, docstring and `__wrapped__`,
takes its own entry off the traceback of an exception passing through it (`_drop_own_frame`). The backward pass is
seen through sys.monitoring (Python >= 3.12), else through `torch.autograd._make_grads`, which returns before the
engine runs, and the engine's own final callback (`_watch_backward_start`): no frame of the probe's is in a stack
taken inside backward. Only a torch without those pieces gets a wrapper of `torch.autograd.backward`, registered as
TorchScript's builtin for `aten::backward` while it is in place, so a scripted function that calls it compiles.
"""
import functools
import sys
import threading
import time

from . import calls, hooks, safe

_get_ident = threading.get_ident
_perf_counter = time.perf_counter


def _drop_own_frame(e):
    """Takes the calling wrapper's own entry off the traceback of an exception passing through it, so the script's
    traceback reads as without the probe: from Python 3.11 a bare `raise` re-raises with the exception's
    `__traceback__` and adds no entry (on older Pythons this changes nothing). A function of its own so that no
    wrapper frame keeps the traceback that refers to it (a reference cycle)."""
    tb = e.__traceback__
    if tb is not None and tb.tb_frame is sys._getframe(1):
        e.__traceback__ = tb.tb_next


class Patches(object):
    """Attributes replaced by the probe: name -> (owner, attribute, original, replacement, undo)."""

    def __init__(self):
        self.items = {}

    def replace(self, name, owner, attr, replacement, undo=None):
        original = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr)
        self.items[name] = (owner, attr, original, replacement, undo)
        setattr(owner, attr, replacement)
        return original

    def add_undo(self, name, undo):
        """A patch that is not an attribute (a hook handle, a registration): `undo()` takes it back."""
        self.items[name] = (None, None, None, None, undo)

    def has(self, name):
        return name in self.items

    def restore(self, name):
        item = self.items.pop(name, None)
        if item is None:
            return
        owner, attr, original, replacement, undo = item
        try:
            if owner is not None and getattr(owner, attr, None) is replacement:
                if original is None and isinstance(owner, type):
                    delattr(owner, attr)
                else:
                    setattr(owner, attr, original)
        finally:
            if undo is not None:
                undo()

    def restore_all(self):
        for name in list(self.items)[::-1]:
            try:
                self.restore(name)
            except Exception:
                pass


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
            probe.import_hook = None
            try:
                sys.meta_path.remove(hook)
            except ValueError:
                pass
            try:
                del loader.exec_module  # the loader's own method again
            except AttributeError:
                pass
            original(module)
            probe.on_torch_imported(module)

        loader.exec_module = exec_module
        return spec


def _watch(calls_watch, patches, name, function, on_return):
    """Sees `function`'s calls through sys.monitoring (calls.py), with the undo under `name`: True, or False where
    it cannot (Python < 3.12, no free tool id, a function without Python code) and a wrapper is needed."""
    code = getattr(function, "__code__", None)
    if code is None or not calls.available():
        return False
    undo = calls_watch.watch(code, on_return)
    if undo is None:
        return False
    patches.add_undo(name, undo)
    return True


def install_optimizer(probe, patches, torch, steps):
    """Steps: the global post-step hook (torch >= 2.0), else torch 1.x's profiler entry point called after each step,
    else (older torch) each optimizer class's `step` wrapped; `__init__` wrapped until the first step, only to know
    whether the script builds an optimizer (the batch fallback). Returns which of them sees the steps."""
    # torch 2.x: the global post-step hook, put into torch's table without a handle id of the script's (hooks.py).
    handle = hooks.optimizer_post_hook(torch, steps.optimizer_hook)
    Optimizer = torch.optim.Optimizer
    original_init = Optimizer.__dict__["__init__"]
    wrap_steps = False
    if handle is not None:
        patches.add_undo("optimizer-hook", handle.remove)
        step_hook = "optimizer-step-post-hook"
    elif "_optimizer_step_code" in Optimizer.__dict__ and "_hook_for_profile" in Optimizer.__dict__:
        # torch 1.x wraps every optimizer class's `step` for its own profiler, and that wrapper calls
        # `self._optimizer_step_code()` after each step: torch's private entry point for profilers, inherited by every
        # optimizer. Seeing that call leaves `step` itself, which scripts and libraries inspect, torch's own.
        original_code = Optimizer.__dict__["_optimizer_step_code"]
        step_hook = "optimizer-step-code"

        def _optimizer_step_code(self_opt):
            original_code(self_opt)  # still called: a profiler's Python tracer looks for its frame
            steps.optimizer_hook(self_opt)

        functools.update_wrapper(_optimizer_step_code, original_code)
        patches.replace("optimizer-step-code", Optimizer, "_optimizer_step_code", _optimizer_step_code)
    else:
        step_hook = "optimizer-step-wrapper"
        wrap_steps = True

    def __init__(self_opt, *args, **kwargs):
        steps.saw_optimizer_built()
        try:
            original_init(self_opt, *args, **kwargs)
        except BaseException as e:
            _drop_own_frame(e)
            raise
        if wrap_steps:
            probe.guarded(wrap_optimizer_step, torch, steps, patches, type(self_opt))

    functools.update_wrapper(__init__, original_init)
    patches.replace("optimizer-init", Optimizer, "__init__", __init__)
    return step_hook


def wrap_optimizer_step(torch, steps, patches, cls):
    """Wraps the `step` that instances of optimizer class `cls` run (a torch with neither a global step hook nor the
    profiler's entry point); once per defining class. Also used by the notebook for classes built before the probe existed."""
    # The class in the MRO whose `step` runs (a user's subclass may inherit AdamW's); the base class's is abstract.
    owner = next((c for c in safe.mro(cls) if "step" in safe.class_dict(c)), None)
    own = safe.class_dict(owner) if owner is not None else {}
    name = "optimizer-step:%s.%s" % (own.get("__module__", "?"), own.get("__qualname__", "?"))
    if owner is None or owner is torch.optim.Optimizer or patches.has(name):
        return
    step = own["step"]

    def step_wrapper(self_opt, *args, **kwargs):
        try:
            out = step(self_opt, *args, **kwargs)
        except BaseException as e:
            _drop_own_frame(e)
            raise
        steps.optimizer_hook(self_opt)
        return out

    # Keeps torch's own markers (1.x sets `hooked` on the profiled step) and the name.
    functools.update_wrapper(step_wrapper, step)
    patches.replace(name, owner, "step", step_wrapper)


def install_dataloader(probe, patches, dl, steps, sampler, calls_watch):
    """DataLoader waits and batches: every `__next__` of a DataLoader iterator timed; and each iterator as
    `DataLoader.__iter__` returns it (its settings and workers: loader.py). Returns the code of `__next__` where
    sys.monitoring watches it (paused between bursts of the sampled loop: sampling.py), else None."""
    original_iter = dl.DataLoader.__dict__.get("__iter__")
    if original_iter is not None:

        def on_iter(t0, it, frame, ident):
            if not probe.disabled:
                probe.guarded(steps.on_loader_iter, frame.f_locals.get("self"), it, t0)

        if not _watch(calls_watch, patches, "dataloader-iter", original_iter, on_iter):

            def __iter__(loader):
                t0 = _perf_counter()
                try:
                    it = original_iter(loader)
                except BaseException as e:
                    _drop_own_frame(e)
                    raise
                if not probe.disabled:
                    probe.guarded(steps.on_loader_iter, loader, it, t0)
                return it

            functools.update_wrapper(__iter__, original_iter)
            patches.replace("dataloader-iter", dl.DataLoader, "__iter__", __iter__)
    original_next = dl._BaseDataLoaderIter.__dict__["__next__"]

    def on_next(t0, batch, frame, ident):
        if not probe.disabled:
            probe.guarded(steps.on_batch, t0, _perf_counter() - t0, batch, ident, frame.f_locals.get("self"))

    if _watch(calls_watch, patches, "dataloader-next", original_next, on_next):
        return original_next.__code__

    # Without sys.monitoring: `__next__` calls `self._next_data()`, a private method of each iterator class that
    # nothing but `__next__` calls or inspects; wrapping it leaves the iterator's `__next__` torch's own. The wait is
    # the fetch without `__next__`'s own bookkeeping (a profiler label, a counter).
    todo, classes = [dl._BaseDataLoaderIter], []
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "_next_data" in cls.__dict__ and cls is not dl._BaseDataLoaderIter:
            classes.append(cls)
    for cls in classes:
        _wrap_next_data(probe, patches, cls, steps, sampler)
    return None


def _wrap_next_data(probe, patches, cls, steps, sampler):
    original = cls.__dict__["_next_data"]

    def _next_data(it):
        t0 = _perf_counter()
        try:
            batch = original(it)
        except BaseException as e:  # StopIteration and the loader's own errors pass unchanged
            _drop_own_frame(e)
            raise
        if probe.disabled or sampler.batches_paused:  # paused: between bursts of the sampled loop (sampling.py)
            return batch
        if probe.role is None:
            probe.guarded(steps.on_batch, t0, _perf_counter() - t0, batch, _get_ident(), it)
            return batch
        try:  # guarded, inlined: this runs for every batch
            steps.on_batch(t0, _perf_counter() - t0, batch, _get_ident(), it)
        except Exception as e:
            probe.fail(e)
        return batch

    functools.update_wrapper(_next_data, original)
    patches.replace("dataloader-next:%s" % cls.__qualname__, cls, "_next_data", _next_data)


def install_backward(probe, patches, torch, steps, sampler, calls_watch):
    """Backward passes: `Tensor.backward` calls `torch.autograd.backward` by attribute, so one wrapper sees both.
    Returns its code where sys.monitoring watches it (paused between bursts: sampling.py), else None."""
    original = torch.autograd.backward

    def on_return(t0, value, frame, ident):
        if not probe.disabled:
            probe.guarded(steps.on_backward, ident, t0)

    if _watch(calls_watch, patches, "backward", original, on_return):
        return original.__code__
    if _watch_backward_start(probe, patches, torch, original, steps, sampler):
        return None

    def backward(*args, **kwargs):
        t0 = _perf_counter()
        try:
            out = original(*args, **kwargs)
        except BaseException as e:
            _drop_own_frame(e)
            raise
        if sampler.burst_at is None and not probe.disabled:  # between bursts: not watched (sampling.py)
            probe.guarded(steps.on_backward, _get_ident(), t0)
        return out

    functools.update_wrapper(backward, original)
    builtins = sys.modules.get("torch.jit._builtins")
    register = getattr(builtins, "_register_builtin", None)

    def unregister():
        table = getattr(builtins, "_builtin_table", None)
        if isinstance(table, dict):
            table.pop(id(backward), None)

    if register is not None:
        try:
            register(backward, "aten::backward")  # TorchScript resolves the wrapper as it does the original
        except Exception:
            pass
    patches.replace("backward", torch.autograd, "backward", backward, undo=unregister)
    return None


def _watch_backward_start(probe, patches, torch, backward, steps, sampler):
    """Where sys.monitoring is missing: the backward pass seen without a frame of the probe's inside it (a wrapper of
    `torch.autograd.backward` is a frame in every stack taken in backward: a custom Function's, a tensor hook's,
    faulthandler's, a warning's `stacklevel`). `torch.autograd.backward` calls `torch.autograd._make_grads` before the
    engine runs: that private function is wrapped, and its frame is gone when the pass starts. The pass's end is
    the engine's own final callback (`queue_callback`), queued from a one-time hook on the graph node of the tensor
    the pass starts from (the loss's `grad_fn`, which the pass frees): the backward's wall time (`backwardS`).
    `torch.autograd.grad` calls `_make_grads` too: only calls from `backward`'s code count. False where this torch
    lacks these pieces (the wrapper of `backward` then)."""
    autograd = torch.autograd
    make_grads = autograd.__dict__.get("_make_grads")
    backward_code = getattr(backward, "__code__", None)
    engine = getattr(getattr(getattr(autograd, "variable", None), "Variable", None), "_execution_engine", None)
    queue_callback = getattr(engine, "queue_callback", None)
    if make_grads is None or backward_code is None or queue_callback is None:
        return False
    getframe = sys._getframe
    Tensor = torch.Tensor
    spans = steps.batch.backward_spans

    def end_hook(t0):
        done = []

        def hook(grad_inputs, grad_outputs):
            if not done:  # (a graph kept with retain_graph runs it again with the next pass: that one has its own)
                done.append(True)
                queue_callback(lambda: spans.append((t0, _perf_counter())))

        return hook

    def _make_grads(outputs, *args, **kwargs):
        t0 = _perf_counter()
        try:
            out = make_grads(outputs, *args, **kwargs)
        except BaseException as e:
            _drop_own_frame(e)
            raise
        if sampler.burst_at is None and not probe.disabled and getframe(1).f_code is backward_code:
            probe.guarded(steps.on_backward, _get_ident(), t0, False)
            # The node of the first plain tensor (a subclass's `grad_fn` may be its own Python code): its hook runs
            # as the pass begins, and the engine calls back when the whole pass is done.
            first = safe.first(outputs)
            node = first.grad_fn if type(first) is Tensor else None
            if node is not None and not probe.disabled:
                try:
                    hooks.rollback(node.register_hook(end_hook(t0)))
                except Exception:
                    pass  # (a node that takes no hook: this pass has no wall time)
        return out

    functools.update_wrapper(_make_grads, make_grads)
    patches.replace("backward", autograd, "_make_grads", _make_grads)
    return True


def install_graph_replay(probe, patches, torch, steps, calls_watch):
    """Counts `torch.cuda.CUDAGraph.replay` calls (a Python method over the C graph in every torch with graphs)."""
    cls = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    original = cls.__dict__.get("replay") if cls is not None else None
    if original is None:
        return

    def on_return(t0, value, frame, ident):
        if not probe.disabled:
            probe.guarded(steps.on_graph_replay, frame.f_locals.get("self"), ident)

    if _watch(calls_watch, patches, "graph-replay", original, on_return):
        return

    def replay(graph, *args, **kwargs):
        try:
            out = original(graph, *args, **kwargs)
        except BaseException as e:
            _drop_own_frame(e)
            raise
        if not probe.disabled:
            probe.guarded(steps.on_graph_replay, graph, _get_ident())
        return out

    functools.update_wrapper(replay, original)
    patches.replace("graph-replay", cls, "replay", replay)


def install_compile(probe, patches, torch, root_watch):
    """`torch.compile(module)`: the returned wrapper is the model (model.py, RootWatch.compiled)."""
    original = getattr(torch, "compile", None)
    if original is None:
        return
    Module = torch.nn.Module

    def compile(*args, **kwargs):
        model = args[0] if args else dict.get(kwargs, "model")
        try:
            out = original(*args, **kwargs)
        except BaseException as e:
            _drop_own_frame(e)
            raise
        if safe.is_module(model, Module) and safe.is_module(out, Module) and out is not model and not probe.disabled:
            probe.guarded(root_watch.compiled, out)
        return out

    functools.update_wrapper(compile, original)
    patches.replace("compile", torch, "compile", compile)


def install_profiler_guard(probe, patches, torch, window, profiler):
    """Every torch profiler prepares through `torch.autograd.profiler.profile._prepare_trace`: the probe's window
    steps aside for the script's (window.py)."""
    cls = torch.autograd.profiler.profile
    original = cls.__dict__.get("_prepare_trace")
    if original is None:
        return

    def _prepare_trace(prof, *args, **kwargs):
        if not profiler.lets_through(prof) and not probe.disabled:
            probe.guarded(window.on_user_profiler, prof)
        try:
            return original(prof, *args, **kwargs)
        except BaseException as e:
            _drop_own_frame(e)
            raise

    functools.update_wrapper(_prepare_trace, original)
    patches.replace("profiler-guard", cls, "_prepare_trace", _prepare_trace)
