"""The model: the outermost module found from its calls, its input read for the batch, and the model record."""
import sys
import time
import weakref

from .batch import _batch_dim_of, _batch_size, _batch_tokens, _first_tensor


_FRAMEWORKS = (("transformers.trainer", "transformers"), ("lightning.", "lightning"), ("pytorch_lightning.", "lightning"), ("accelerate.", "accelerate"))



class ModelMixin(object):
    def _watch_roots(self, torch):
        """Global forward hooks until the outermost module is known (see the module docstring)."""
        mod = getattr(torch.nn.modules, "module", None)
        pre = getattr(mod, "register_module_forward_pre_hook", None)
        post = getattr(mod, "register_module_forward_hook", None)
        if pre is None or post is None:
            return
        probe = self

        def on_pre(module, args):
            # Tracing first: inside a graph being compiled nothing of ours belongs, nor a guard on our state.
            if _compiling(torch) or probe.root_ref is not None or probe.disabled:
                return None
            if probe.root_depth == 0:
                probe._guarded(probe._on_root_call, module, args)
            probe.root_depth += 1
            return None

        def on_post(module, args, out):
            if probe.root_depth > 0 and not _compiling(torch):
                probe.root_depth -= 1
            return None

        self.root_watch.append(pre(on_pre))
        try:
            self.root_watch.append(post(on_post, always_call=True))
        except TypeError:  # torch < 2.0: no always_call (a forward that raises leaves depth 1 until a backward)
            self.root_watch.append(post(on_post))

    def _on_root_call(self, module, args):
        # The first call at depth 0 of a module with parameters is the model's: a loss module has none.
        # Settling at once takes the global hooks away before torch.compile traces the model, so no
        # compiled graph ever depends on them (removing them later would force a recompile).
        if next(iter(module.parameters()), None) is None:
            return
        for h in self.root_watch:
            h.remove()
        self.root_watch = []
        self.root_ref = weakref.ref(module)
        self.batch_dim, self.batch_dim_evidence, seq_module = _batch_dim_of(module)
        probe = self
        if seq_module is not None and seq_module is not module:
            self._check_batch_dim(seq_module)

        def on_root_forward(mod, args, kwargs):
            if not probe.disabled and not _compiling(probe.torch):
                probe._guarded(probe._on_root_forward, args, kwargs)
            return None

        try:
            module.register_forward_pre_hook(on_root_forward, with_kwargs=True)
        except TypeError:  # torch < 2.0
            module.register_forward_pre_hook(lambda mod, args: on_root_forward(mod, args, {}))
        # torch runs the hooks it had when this call began: this first call is counted here, from its
        # positional arguments (a model called with keywords only gets its batch from the next call on).
        self._on_root_forward(args, {})

    def _on_root_forward(self, args, kwargs):
        torch = self.torch
        now = time.perf_counter()
        self.last_activity = now
        self.forward_calls += 1
        if self.autocast_dtype is None:
            self.autocast_dtype = _autocast_dtype(torch)
        self._forward_step(now)  # a forward that starts a step ends the one before, before its batch counts
        training = self.step_source != "forward" and torch.is_grad_enabled()
        if training or self.step_source in (None, "forward"):
            # Samples of the training forwards only when steps are training steps (an evaluation pass
            # between them is not the step's work); every forward when forwards are the steps.
            first = _first_tensor(torch, args, kwargs)
            if self.root_input_shape is None and isinstance(first, torch.Tensor):
                self.root_input_shape = tuple(int(d) for d in first.shape)
            # A sequence-first model's input is [seq, batch, ...]: the batch is its second dimension.
            dim = self.batch_dim if isinstance(first, torch.Tensor) and first.dim() > self.batch_dim else 0
            n = _batch_size(torch, first, dim)
            if n is None:
                self.input_samples_known = False
            else:
                self.input_samples += n
            tok = _batch_tokens(torch, kwargs.get("input_ids") if isinstance(kwargs, dict) and "input_ids" in kwargs else first, dim)
            if tok is None:
                self.input_tokens_known = False
            else:
                self.input_tokens += tok[0]
                self.input_seq_len = tok[1]
            self.input_forwards += 1

    def _check_batch_dim(self, seq_module):
        """A one-shot pre-hook on the sequence-first module: a model may transpose its [batch, seq] input before it."""
        probe = self
        handles = []

        def on_call(mod, args):
            if _compiling(probe.torch) or probe.disabled:
                return None
            for h in handles:
                h.remove()  # torch iterates over a copy of the hooks: removing inside one is safe
            del handles[:]
            probe._guarded(probe._confirm_batch_dim, type(mod).__name__, args)
            return None

        handles.append(seq_module.register_forward_pre_hook(on_call))

    def _confirm_batch_dim(self, name, args):
        x = _first_tensor(self.torch, args, {})
        r = self.root_input_shape
        if x is None or r is None or x.dim() < 2 or len(r) < 2 or r[0] == r[1]:
            return  # nothing to compare, or a square input: the flag stands
        if int(x.shape[1]) == r[0]:
            # Its batch (dimension 1) is the model input's dimension 0: the model transposed a batch-first input.
            self.batch_dim = 0
            self.batch_dim_evidence = "%s, fed the input's dimension 0 as its batch (transposed inside the model)" % self.batch_dim_evidence

    def _send_model(self, when):
        optimizer = self.primary_optimizer() if self.primary_optimizer is not None else None
        roots = _model_roots(self.torch, optimizer)
        if not roots and self.root_ref is not None and self.root_ref() is not None:
            roots = [_unwrap(self.torch, self.root_ref())]
        summary = _model_summary(self.torch, roots, optimizer)
        summary.update(self._setup_facts(roots))
        if self.root_ref is not None:
            summary["batchDim"] = self.batch_dim
            summary["batchDimEvidence"] = self.batch_dim_evidence
        if when == "time" and not summary["found"]:
            return  # a loop of functions: no model to describe (yet)
        self.model_sent = when
        self._send("model", summary)

    def _setup_facts(self, roots):
        """What the model record adds to the summary: compiled or not (and how it is known), the training
        framework whose loop runs (from the call stack), and the autocast dtype seen at the model's forward."""
        torch = self.torch
        compiled, evidence = None, None
        root = self.root_ref() if self.root_ref is not None else None
        for m in [root] + list(roots):
            if m is None:
                continue
            if type(m).__name__ == "OptimizedModule" or getattr(m, "_orig_mod", None) is not None:
                compiled, evidence = True, "OptimizedModule (torch.compile(model))"
                break
            if getattr(m, "_compiled_call_impl", None) is not None:
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
            "autocastDtype": self.autocast_dtype,
        }


def _model_roots(torch, optimizer):
    """The model(s) the optimizer trains, found once at the first step: the outermost live
    nn.Modules (no other module's child) holding parameters of the optimizer, unwrapped from
    DDP/DataParallel/FSDP. Read from the garbage collector's objects rather than forward hooks,
    which would slow every module call and interfere with torch.compile's guards."""
    import gc

    params = set()
    for g in optimizer.param_groups if optimizer is not None else ():
        for p in g.get("params", []):
            params.add(id(p))
    Module = torch.nn.Module
    # type() rather than isinstance(): isinstance reads `__class__`, which some objects intercept
    # (torch.distributed's deprecated reduce_op warns on any attribute access).
    modules = [o for o in gc.get_objects() if issubclass(type(o), Module)]
    children = set()
    for m in modules:
        for c in m.children():
            children.add(id(c))
    roots = []
    for m in modules:
        if id(m) in children:
            continue
        m = _unwrap(torch, m)
        if any(m is x for x in roots):
            continue
        # Without an optimizer (gpuwise.step() or batch steps): every outermost module with parameters.
        if any(optimizer is None or id(p) in params for p in m.parameters()):
            roots.append(m)
    # Largest first: the model before, say, a small auxiliary head trained by the same optimizer.
    roots.sort(key=lambda m: -sum(p.numel() for p in m.parameters()))
    return roots


def _unwrap(torch, module):
    # DistributedDataParallel, DataParallel and FSDP1 keep the user's model in `.module`, torch.compile's
    # OptimizedModule in `._orig_mod` (possibly both, in either order).
    for _ in range(4):
        name = type(module).__name__
        if name in ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"):
            inner = getattr(module, "module", None)
        elif name == "OptimizedModule":
            inner = getattr(module, "_orig_mod", None)
        else:
            return module
        if not isinstance(inner, torch.nn.Module):
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
    from the Hugging Face config (`hfConfig`) when the model carries one; gpuwise reads it."""
    seen = set()
    modules = []
    total = 0
    trainable = 0
    buffers = {"count": 0, "bytes": 0, "dtypes": {}}
    name = None
    hf_config = None
    for root in roots:
        name = name or type(root).__name__
        groups = [("(root)", type(root).__name__, root.named_parameters(recurse=False))]
        groups += [(n, type(c).__name__, c.named_parameters()) for n, c in root.named_children()]
        for gname, cls, named in groups:
            entry = {"name": gname, "class": cls, "paramCount": 0, "trainableParamCount": 0, "dtypes": {}}
            for _, p in named:
                if id(p) in seen:
                    continue  # tied weights count once
                seen.add(id(p))
                n = p.numel()
                entry["paramCount"] += n
                entry["trainableParamCount"] += n if p.requires_grad else 0
                d = _dtype_name(p.dtype)
                entry["dtypes"][d] = entry["dtypes"].get(d, 0) + n
            if entry["paramCount"] > 0:
                modules.append(entry)
                total += entry["paramCount"]
                trainable += entry["trainableParamCount"]
        for b in root.buffers():
            buffers["count"] += 1
            buffers["bytes"] += b.numel() * b.element_size()
            d = _dtype_name(b.dtype)
            buffers["dtypes"][d] = buffers["dtypes"].get(d, 0) + b.numel() * b.element_size()
        cfg = getattr(root, "config", None)
        if hf_config is None and cfg is not None and callable(getattr(cfg, "to_dict", None)):
            try:
                import json

                hf_config = json.loads(json.dumps(cfg.to_dict(), default=str))
            except Exception:
                hf_config = None
    state = {"bytes": 0, "dtypes": {}}
    for st in optimizer.state.values() if optimizer is not None else ():
        for v in st.values() if isinstance(st, dict) else ():
            if isinstance(v, torch.Tensor):
                nbytes = v.numel() * v.element_size()
                state["bytes"] += nbytes
                d = _dtype_name(v.dtype)
                state["dtypes"][d] = state["dtypes"].get(d, 0) + nbytes
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
            "class": type(optimizer).__name__,
            "paramGroups": len(optimizer.param_groups),
            "stateBytes": state["bytes"],
            "stateDtypes": state["dtypes"],
        },
        "hfConfig": hf_config,
        "found": len(roots) > 0,
    }
