"""The model: the outermost module found from its calls, and its calls watched while the probe needs them (its input,
the model record: modelwatch.py, modelrecord.py).

The outermost module (the root) is found without touching any module: on Python >= 3.12 the starts of
`Module._call_impl` (sys.monitoring, calls.watch_start), elsewhere global forward hooks put into torch's tables under
the probe's own keys (hooks.py: no handle id taken), watch module calls until the first call at depth 0 (no other
module's call around it) of a module with parameters on the stepping thread, and stop there. Every read of a module
(its parameters, children, `batch_first`, a Hugging Face `config`) goes through safe.py: no property, `__getattr__`
or overridden `parameters()` of the script's runs.
After that, the root's calls are seen only while the probe needs them, never through one of the module's own hooks:
armed at a step's end and after each backward pass when no DataLoader feeds the steps (the batch is then the root's
input, one call per micro-batch), removed at the root's next call; kept while forward calls are the only steps
(inference without a DataLoader). On Python >= 3.12 the start of the root's `forward` code is watched
(calls.watch_start) in both cases: a global hook kept puts every module call of the model on torch's slow path at
every step (+16-40% a forward measured on a CPU model of small modules), and one added and removed at each step
changes the module hooks a compiled region guards on, recompiling it each time. Older Pythons get a global pre-hook. A global hook is
given the positional arguments only: the keyword ones are read from its caller's frame (`_call_kwargs`). Nothing of
the probe's is ever in a module's `__dict__`, so pickling, `copy.deepcopy`, TorchScript, tracing, export and compile
see the model as the script made it.
A model compiled with `torch.compile(module)` is the one exception: its `OptimizedModule` wrapper gets one pre-hook
(its hooks run outside the compiled code, and its `__reduce__` pickles and copies it without them), because global
hooks make `OptimizedModule.__call__` warn.
"""
import sys
import threading
import types
import weakref

from . import hooks, safe

def _tracing(torch):
    f = getattr(torch._C, "_get_tracing_state", None)
    return f is not None and f() is not None


class RootWatch(object):
    """The probe's view of the root's calls (see the module docstring). `on_call(module, args, kwargs, ident)` is the
    probe's callback for a call at depth 0 while discovering, and for each call of the root while armed."""

    def __init__(self, torch, on_discovered, on_root_call, calls=None):
        self.torch = torch
        self.calls = calls  # calls.CallWatch: the root's forward code watched while persistent (Python >= 3.12)
        # Global hooks put into torch's tables without a handle id of the script's (hooks.py).
        self._register_pre = lambda hook: hooks.global_forward_pre_hook(torch, hook)
        self._register_post = lambda hook: hooks.global_forward_hook(torch, hook, always_call=True)
        self.on_discovered = on_discovered
        self.on_root_call = on_root_call
        self.root_ref = None
        self.root_thread = None
        self.thread = None  # only calls on this thread count (the stepping thread, once known)
        self.discovery = []  # handles of the global hooks that look for the root
        self.depth = {}  # thread ident -> module calls open on it (discovery only)
        self.armed = None  # handle of the global pre-hook that waits for the root's next call
        self.instance = None  # handle of the pre-hook on a compiled root's OptimizedModule
        self.persistent = False  # keep the pre-hook armed after a call (forward calls are the steps)
        # The `_call_impl` frame (its id) of the root call discovery has just read: the start of its `forward`, which
        # the watch armed then sees next, is the same call (read once).
        self.read_at_found = None

    def root(self):
        return self.root_ref() if self.root_ref is not None else None

    # ---------- discovery ----------

    def discover(self):
        """Arms what finds the root (at `import torch`, and again when the root was found on a thread that turned out
        not to step): the starts of nn.Module's `_call_impl` code where sys.monitoring can watch them, else global
        hooks."""
        if self.discovery or self._register_pre is None or self._register_post is None:
            return
        if self._discover_by_code():
            return
        torch = self.torch
        watch = self

        def on_pre(module, args):
            # Tracing first: inside a graph being traced or compiled nothing of ours belongs, nor a guard on our state.
            if _compiling(torch) or _tracing(torch):
                return None
            ident = threading.get_ident()
            d = watch.depth.get(ident, 0)
            watch.depth[ident] = d + 1
            if d == 0 and (watch.thread is None or watch.thread == ident) and safe.has_parameters(module):
                watch._found(module, args, ident)
            return None

        def on_post(module, args, out):
            if _compiling(torch) or _tracing(torch):
                return None
            ident = threading.get_ident()
            d = watch.depth.get(ident, 0)
            if d > 0:
                watch.depth[ident] = d - 1
            return None

        # (torch < 2.0 has no always_call: a forward that raises leaves its depth until a backward.)
        for h in (self._register_pre(on_pre), self._register_post(on_post)):
            if h is not None:
                self.discovery.append(h)

    def _discover_by_code(self):
        """Python >= 3.12: the root found from the starts of `Module._call_impl` (calls.watch_start), nothing in torch's
        hook tables (a script, a library or torch.compile that reads them sees none, a trace records no hook). A call
        is at depth 0 when no other `_call_impl` frame is below it on its thread's stack. False where it cannot
        watch (an older Python, no free tool id, a torch whose `_call_impl` is not Python code)."""
        Module = self.torch.nn.Module
        impl = safe.class_dict(Module).get("_call_impl")
        code = impl.__code__ if type(impl) is types.FunctionType else None
        if self.calls is None or code is None or code.co_argcount < 1 or not code.co_flags & 0x04:  # CO_VARARGS
            return False
        n = code.co_argcount + code.co_kwonlyargcount
        self_name, star = code.co_varnames[0], code.co_varnames[n]
        starstar = code.co_varnames[n + 1] if code.co_flags & 0x08 else None  # CO_VARKEYWORDS
        torch = self.torch
        watch = self

        def on_start(frame, ident):
            if _compiling(torch) or _tracing(torch) or (watch.thread is not None and watch.thread != ident):
                return
            f = frame.f_back
            while f is not None:
                if f.f_code is code:
                    return  # inside another module's call
                f = f.f_back
            try:
                loc = frame.f_locals
                module, args = loc.get(self_name), loc.get(star) or ()
                kwargs = loc.get(starstar) if starstar is not None else None
                kwargs = dict(kwargs) if type(kwargs) is dict else {}
            except Exception:
                return
            if module is not None and safe.has_parameters(module):
                watch._found(module, args, ident, kwargs, id(frame))

        undo = self.calls.watch_start(code, on_start)
        if undo is None:
            return False
        self.discovery.append(_Handle(undo))
        return True

    def end_discovery(self):
        for h in self.discovery:
            h.remove()
        self.discovery = []
        self.depth = {}

    def reset_depth(self):
        """A backward pass: no forward is open on any thread (one that raised left its depth behind)."""
        if self.depth:
            self.depth = {}

    def _found(self, module, args, ident, kwargs=None, call_frame=None):
        # The first call at depth 0 of a module with parameters is the model's: a loss module has none. Settling at
        # once takes the global hooks away before torch.compile traces the model.
        self.end_discovery()
        self.root_ref = weakref.ref(module)
        self.root_thread = ident
        self.on_discovered(module)
        if isinstance(self.armed, _Handle) and call_frame is not None:
            self.read_at_found = call_frame  # armed through the forward's code: its start is this very call
        self.on_root_call(args, _call_kwargs(1) if kwargs is None else kwargs, ident)

    def compiled(self, wrapper):
        """`torch.compile(module)` returned `wrapper` (an OptimizedModule): it is the root; global hooks end."""
        self.end_discovery()
        self.disarm()
        self.root_ref = weakref.ref(wrapper)
        self.root_thread = None
        watch = self

        def on_call(mod, args, kwargs=None):
            ident = threading.get_ident()
            if watch.thread is None or watch.thread == ident:
                watch.on_root_call(args, kwargs or {}, ident)
            return None

        self.instance = hooks.instance_forward_pre_hook(wrapper, on_call)
        self.on_discovered(wrapper)

    def set_thread(self, ident):
        """The stepping thread is known: a root found on another thread (an evaluator) is given up and found again."""
        self.thread = ident
        if self.root_ref is not None and self.instance is None and self.root_thread not in (None, ident):
            self.root_ref = None
            self.root_thread = None
            self.disarm()
            self.discover()

    # ---------- the root's calls ----------

    def arm(self, persistent=False):
        """Sees the root's next call on the stepping thread (all of them while `persistent`)."""
        self.persistent = persistent
        if self.armed is not None or self.instance is not None or self.root_ref is None or self._register_pre is None:
            return
        torch = self.torch
        watch = self
        root = self.root_ref

        def on_pre(module, args):
            if module is not root() or _compiling(torch) or _tracing(torch):
                return None
            ident = threading.get_ident()
            if watch.thread is not None and watch.thread != ident:
                return None
            if not watch.persistent:
                watch.disarm()  # on_root_call arms it again for an evaluation call (no gradients)
            watch.on_root_call(args, _call_kwargs(), ident)
            return None

        # The forward's code watched rather than a global pre-hook wherever it can be, persistent or not: a global
        # hook added and removed at each step changes the module hooks a compiled region guards on, and each change
        # recompiles it (a static-cache generate() at batch 8 on an H200 hit dynamo's recompile limit and ran eager,
        # 15 ms a decode step under doctor against 2.8 plainly).
        if self._watch_forward(root):
            return
        self.armed = self._register_pre(on_pre)

    def _watch_forward(self, root):
        """Arms through the start of the root's `forward` code (calls.watch_start) rather than a global hook, which
        every module call of the model would pay for at each of the steps. False where it cannot (Python < 3.12, no
        free tool id, a forward that is not plain Python code, one set on the instance)."""
        module = root()
        own = safe.instance_dict(module) if module is not None else None
        if self.calls is None or module is None or own is None or "forward" in own:
            return False
        forward = safe.type_attr(type(module), "forward")
        code = forward.__code__ if type(forward) is types.FunctionType else None
        if code is None or code.co_argcount < 1:
            return False
        n = code.co_argcount + code.co_kwonlyargcount
        names = code.co_varnames[:n]
        star = code.co_varnames[n] if code.co_flags & 0x04 else None  # CO_VARARGS
        starstar = code.co_varnames[n + (star is not None)] if code.co_flags & 0x08 else None  # CO_VARKEYWORDS
        positional = names[1 : code.co_argcount]
        keyword = names[code.co_argcount :]
        torch = self.torch
        watch = self

        def on_start(frame, ident):
            if watch.read_at_found is not None:
                same = frame.f_back is not None and id(frame.f_back) == watch.read_at_found
                watch.read_at_found = None
                if same:
                    return  # the call discovery has just read
            try:
                loc = frame.f_locals
                if loc.get(names[0]) is not root() or _compiling(torch) or _tracing(torch):
                    return
                if watch.thread is not None and watch.thread != ident:
                    return
                args = tuple(loc[k] for k in positional if loc.get(k) is not None)
                if star is not None:
                    args += tuple(loc.get(star) or ())
                kwargs = dict((k, loc[k]) for k in keyword if loc.get(k) is not None)
                if starstar is not None:
                    kwargs.update(loc.get(starstar) or {})
                if "input_ids" in positional and loc.get("input_ids") is not None:
                    kwargs["input_ids"] = loc["input_ids"]
            except Exception:
                return  # (a frame that cannot be read: this call goes unseen; on_root_call is guarded itself)
            if not watch.persistent:
                watch.disarm()
            watch.on_root_call(args, kwargs, ident)

        undo = self.calls.watch_start(code, on_start)
        if undo is None:
            return False
        self.armed = _Handle(undo)
        return True

    def give_up_calls(self):
        """A DataLoader feeds the steps (batches outrank forwards): the root's calls are no longer needed."""
        self.persistent = False
        self.disarm()

    def disarm(self):
        if self.armed is not None:
            self.armed.remove()
            self.armed = None

    def remove_all(self):
        self.end_discovery()
        self.disarm()
        if self.instance is not None:
            self.instance.remove()
            self.instance = None


def _call_kwargs(depth=0):
    """The keyword arguments of the module call whose global pre-hook is running: torch gives a global hook the
    positional ones only, and a Hugging Face model is called with keywords (`model(**batch)`, each step of
    `generate()`). Read from the hook's caller, `Module._call_impl`, `depth` frames above the hook (a copy; {} where the
    caller is not that)."""
    try:
        f = sys._getframe(2 + depth)
        if f.f_code.co_name != "_call_impl":
            return {}
        kwargs = f.f_locals.get("kwargs")
        return dict(kwargs) if type(kwargs) is dict else {}
    except Exception:
        return {}


class _Handle(object):
    """An undo with a hook handle's `remove()`."""

    def __init__(self, undo):
        self.remove = undo


def _compiling(torch):
    """Whether dynamo is tracing this very call (our hooks must then stay out of the graph)."""
    f = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    try:
        return bool(f()) if f is not None else False
    except Exception:
        return False
