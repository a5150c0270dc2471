"""The `model` record, read once at the first step (or with the time window): the model(s) the optimizer trains, their
parameters and setup (autocast, a Hugging Face config, the framework that drives the loop, torch.compile), each read
through safe.py: no property, `__getattr__` or override of the script's runs."""
import gc
import os
import sys

from . import safe

# Training frameworks whose own loop drives the steps, by the module of a frame on the stack at a step.
_FRAMEWORKS = (("transformers.trainer", "transformers"), ("lightning.", "lightning"), ("pytorch_lightning.", "lightning"), ("accelerate.", "accelerate"))


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


def autocast_in_force(torch):
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
