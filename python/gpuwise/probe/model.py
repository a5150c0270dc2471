"""The model: the outermost module found from its calls, its input read for the batch, and the model record.

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
import gc
import os
import sys
import threading
import types
import weakref

from . import hooks, safe

# Training frameworks whose own loop drives the steps, by the module of a frame on the stack at a step.
_FRAMEWORKS = (("transformers.trainer", "transformers"), ("lightning.", "lightning"), ("pytorch_lightning.", "lightning"), ("accelerate.", "accelerate"))


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


def _model_roots(torch, optimizer):
    """The model(s) the optimizer trains, found once at the first step: the outermost live
    nn.Modules (no other module's child) holding parameters of the optimizer, unwrapped from
    DDP/DataParallel/FSDP. Read from the garbage collector's objects rather than forward hooks,
    which would slow every module call and interfere with torch.compile's guards."""
    params = set(id(p) for p in _optimizer_params(optimizer))
    Module = torch.nn.Module
    # The type's MRO rather than isinstance(): isinstance reads `__class__`, which some objects intercept
    # (torch.distributed's deprecated reduce_op warns on any attribute access). Every read below is safe.py's.
    modules = [o for o in gc.get_objects() if safe.is_module(o, Module)]
    children = set()
    for m in modules:
        for _, c in safe.children(m):
            children.add(id(c))
    roots = []
    for m in modules:
        if id(m) in children:
            continue
        m = _unwrap(torch, m)
        if any(m is x for x in roots):
            continue
        # Without an optimizer (gpuwise.step() or batch steps): every outermost module with parameters.
        if any(optimizer is None or id(p) in params for p in safe.parameters(m)):
            roots.append(m)
    # Largest first: the model before, say, a small auxiliary head trained by the same optimizer.
    tensors = safe.Tensors(torch)
    with tensors.disabled():
        sizes = dict((id(m), sum(_numel(tensors, p) for p in safe.parameters(m))) for m in roots)
    roots.sort(key=lambda m: -sizes[id(m)])
    return roots


def _numel(tensors, t):
    """Elements of a tensor the probe may read (safe.Tensors), 0 for one it may not (an uninitialized parameter)."""
    facts = tensors.facts(t)
    return facts[0] if facts is not None else 0


def _optimizer_params(optimizer):
    """The parameters of an optimizer's groups, read off its instance dict (no property or override runs)."""
    out = []
    for g in safe.head(safe.attr(optimizer, "param_groups"), 10000) if optimizer is not None else ():
        out.extend(safe.head(safe.get(g, "params"), 10000000))
    return out


def _unwrap(torch, module):
    # DistributedDataParallel, DataParallel and FSDP1 keep the user's model in `.module`, torch.compile's
    # OptimizedModule in `._orig_mod` (possibly both, in either order).
    # Both are registered submodules: read from the `_modules` table, never through the wrapper's `__getattr__`.
    for _ in range(4):
        name = safe.type_name(module)
        if name in ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"):
            inner = dict(safe.children(module)).get("module")
        elif name == "OptimizedModule":
            inner = dict(safe.children(module)).get("_orig_mod")
        else:
            return module
        if inner is None or not safe.is_module(inner, torch.nn.Module):
            return module
        module = inner
    return module


def _compiling(torch):
    """Whether dynamo is tracing this very call (our hooks must then stay out of the graph)."""
    f = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    try:
        return bool(f()) if f is not None else False
    except Exception:
        return False


def _autocast_dtype(torch):
    """The CUDA autocast dtype in force ("bfloat16", "float16"), "" when autocast is off, None if unknown."""
    try:
        try:
            on = torch.is_autocast_enabled("cuda")
            dtype = torch.get_autocast_dtype("cuda")
        except TypeError:  # torch < 2.4
            on = torch.is_autocast_enabled()
            dtype = torch.get_autocast_gpu_dtype()
        return _dtype_name(dtype) if on else ""
    except Exception:
        return None


def _accelerate_precision():
    """The mixed precision accelerate was set up with ("no", "bf16", "fp16", "fp8"), or None when accelerate is not
    in use. accelerate enters autocast inside the prepared model's forward (it wraps model.forward), after the point
    where the probe reads the autocast state, so its own state says what the run asked for: accelerate launch's
    --mixed_precision or config file (ACCELERATE_MIXED_PRECISION), Accelerator(mixed_precision=...), or a Hugging Face
    Trainer's bf16/fp16 (the Trainer builds an Accelerator)."""
    st = sys.modules.get("accelerate.state")
    if st is None:
        return None
    try:
        cls = safe.attr(st, "AcceleratorState")
        shared = safe.type_attr(cls, "_shared_state") if type(cls) is type else None
        mp = safe.get(shared, "_mixed_precision")
    except Exception:
        mp = None
    if mp is None:
        mp = os.environ.get("ACCELERATE_MIXED_PRECISION")  # launched by accelerate, its Accelerator not built yet
    if mp is None:
        return None
    mp = safe.attr(mp, "_value_", mp)  # a PrecisionType enum in some versions (its member's own value)
    return mp if type(mp) is str else None


def _framework():
    """(name, version) of the training framework on the call stack, e.g. ("transformers", "4.57.0")."""
    found = None
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "") or ""
        for prefix, name in _FRAMEWORKS:
            if mod.startswith(prefix):
                found = name  # keep walking: the outermost framework wins (Trainer above accelerate)
        f = f.f_back
    if found is None:
        return None, None
    top = {"transformers": "transformers", "lightning": "lightning" if "lightning" in sys.modules else "pytorch_lightning", "accelerate": "accelerate"}[found]
    return found, getattr(sys.modules.get(top), "__version__", None)


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _model_summary(torch, roots, optimizer):
    """The `model` record: a gpuwise-model/1 object (paramCount, paramGroups, names) plus the
    per-module dtypes, buffers and optimizer state. The architecture numbers `plan` needs come
    from the Hugging Face config (`hfConfig`) when the model carries one; gpuwise reads it.
    Every read is safe.py's: the modules' own tables, torch's C tensor accessors; a tensor it may not read (an
    uninitialized lazy parameter, a subclass whose sizes are Python code) is left out of the counts."""
    tensors = safe.Tensors(torch)
    with tensors.disabled():
        return _model_summary_read(torch, tensors, roots, optimizer)


def _model_summary_read(torch, tensors, roots, optimizer):
    seen = set()
    modules = []
    total = 0
    trainable = 0
    buffers = {"count": 0, "bytes": 0, "dtypes": {}}
    name = None
    hf_config = None
    for root in roots:
        name = name or safe.type_name(root)
        groups = [("(root)", safe.type_name(root), [p for _, p in safe.own_parameters(root)])]
        groups += [(n, safe.type_name(c), safe.parameters(c)) for n, c in safe.children(root)]
        for gname, cls, params in groups:
            entry = {"name": gname, "class": cls, "paramCount": 0, "trainableParamCount": 0, "dtypes": {}}
            for p in params:
                if id(p) in seen:
                    continue  # tied weights count once
                seen.add(id(p))
                facts = tensors.facts(p)
                if facts is None:
                    continue
                n, dtype, _, requires_grad = facts
                entry["paramCount"] += n
                entry["trainableParamCount"] += n if requires_grad else 0
                d = _dtype_name(dtype)
                entry["dtypes"][d] = entry["dtypes"].get(d, 0) + n
            if entry["paramCount"] > 0:
                modules.append(entry)
                total += entry["paramCount"]
                trainable += entry["trainableParamCount"]
        for b in safe.buffers(root):
            facts = tensors.facts(b)
            if facts is None:
                continue
            n, dtype, size, _ = facts
            buffers["count"] += 1
            buffers["bytes"] += n * size
            d = _dtype_name(dtype)
            buffers["dtypes"][d] = buffers["dtypes"].get(d, 0) + n * size
        if hf_config is None:
            hf_config = hf_config_of(safe.attr(root, "config"))
    state = {"bytes": 0, "dtypes": {}}
    for st in safe.values(safe.attr(optimizer, "state")) if optimizer is not None else ():
        for v in safe.values(st):
            facts = tensors.facts(v) if safe.is_a(v, torch.Tensor) else None
            if facts is not None:
                nbytes = facts[0] * facts[2]
                state["bytes"] += nbytes
                d = _dtype_name(facts[1])
                state["dtypes"][d] = state["dtypes"].get(d, 0) + nbytes
    groups_n = safe.length(safe.attr(optimizer, "param_groups")) if optimizer is not None else None
    return {
        "format": "gpuwise-model/1",
        "name": name or "unknown",
        "modelType": name or "unknown",
        "architecture": name or "unknown",
        "paramCount": trainable,
        "totalParamCount": total,
        "paramGroups": [{"name": m["name"], "count": m["trainableParamCount"]} for m in modules],
        "modules": modules,
        "buffers": buffers,
        "optimizer": None
        if optimizer is None
        else {
            "class": safe.type_name(optimizer),
            "paramGroups": groups_n or 0,
            "stateBytes": state["bytes"],
            "stateDtypes": state["dtypes"],
        },
        "hfConfig": hf_config,
        "found": len(roots) > 0,
    }


# A Hugging Face config's values are read this deep (a composite model's text and vision configs are one level down).
_CONFIG_DEPTH = 3


def hf_config_of(cfg):
    """A Hugging Face model's config (a `PretrainedConfig`) as JSON: its instance's plain values and its class's
    `model_type`, read without calling `to_dict()` (the config's own code: a subclass may override it, warn, or
    compute); None for anything else."""
    if cfg is None or "PretrainedConfig" not in safe.class_names(cfg):
        return None
    return _plain(cfg, _CONFIG_DEPTH)


def _plain(v, depth):
    """`v` as JSON values where it is one already (numbers, strings, lists, dicts, a torch dtype by name, a nested
    config); anything else is left out (None)."""
    t = type(v)
    if v is None or t in (bool, int, float, str):
        return v
    if depth <= 0:
        return None
    if safe.is_sequence(v):
        return [_plain(x, depth - 1) for x in safe.head(v, 1000)]
    if safe.is_dict(v):
        return dict((k, _plain(x, depth - 1)) for k, x in safe.items(v)[:1000] if type(k) is str)
    if safe.type_name(v) == "dtype":
        return _dtype_name(v)  # torch.dtype's str is C
    if "PretrainedConfig" in safe.class_names(v):
        own = safe.instance_dict(v) or {}
        out = dict((k, _plain(x, depth - 1)) for k, x in own.items() if type(k) is str and not k.startswith("_"))
        model_type = safe.type_attr(type(v), "model_type")
        if type(model_type) is str and "model_type" not in out:
            out["model_type"] = model_type
        return out
    return None


def setup_facts(torch, root, roots, autocast_dtype):
    """What the model record adds to the summary: compiled or not (and how it is known), the training framework
    whose loop runs (from the call stack), and the autocast dtype seen at the model's forward."""
    compiled, evidence = None, None
    for m in [root] + list(roots):
        if m is None:
            continue
        if safe.type_name(m) == "OptimizedModule" or dict(safe.children(m)).get("_orig_mod") is not None:
            compiled, evidence = True, "OptimizedModule (torch.compile(model))"
            break
        if safe.attr(m, "_compiled_call_impl") is not None:
            compiled, evidence = True, "module.compile()"
            break
    if compiled is None:
        dynamo = sys.modules.get("torch._dynamo.utils")
        try:
            frames = dynamo.counters["stats"]["unique_graphs"] if dynamo is not None else 0
        except Exception:
            frames = 0
        compiled, evidence = (True, "torch._dynamo compiled %d graphs" % frames) if frames else (False, None)
    framework, version = _framework()
    return {
        "compiled": compiled,
        "compiledEvidence": evidence,
        "framework": framework,
        "frameworkVersion": version,
        "autocastDtype": autocast_dtype,
        "acceleratePrecision": _accelerate_precision(),
    }


def _root_holds_all(root, optimizer):
    """Whether the outermost module seen holds every parameter the optimizer trains: then it is the model, and the
    garbage collector's objects need not be walked (`gc.get_objects` is an audit event the script would see)."""
    if root is None or optimizer is None:
        return False
    params = _optimizer_params(optimizer)
    held = set(id(p) for p in safe.parameters(root))
    return len(params) > 0 and all(id(p) in held for p in params)


def model_record(torch, optimizer, root, autocast_dtype, batch_dim):
    """The `model` record's fields: the summary of the model(s) the optimizer trains (else the root), its set-up and,
    when the root is known, how its input holds the batch (`batch_dim`: (dimension, evidence) or None)."""
    inner = _unwrap(torch, root) if root is not None else None
    roots = [inner] if _root_holds_all(inner, optimizer) else _model_roots(torch, optimizer)
    if not roots and root is not None:
        roots = [_unwrap(torch, root)]
    summary = _model_summary(torch, roots, optimizer)
    summary.update(setup_facts(torch, root, roots, autocast_dtype))
    if batch_dim is not None:
        summary["batchDim"] = batch_dim[0]
        summary["batchDimEvidence"] = batch_dim[1]
    return summary
