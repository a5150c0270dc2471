"""Reading the script's objects without running any of their Python code: the one way the probe touches a model, a
batch, an optimizer, a DataLoader or a profiler of the script's.

An attribute read (`obj.name`, `getattr`, `hasattr`) can run the script's code: a property (a deprecated `config`
that warns), `__getattr__` (a wrapper that forwards to the model it wraps), `__getattribute__` (a proxy that logs).
So can a method call (an overridden `parameters()`, a dict subclass's `values()` that records the fields read) and even
`isinstance`, which reads `obj.__class__` and calls the class's metaclass `__instancecheck__`. The accessors here use
only what cannot: the type and its MRO (`type(obj)`, the classes' own dicts, read through `type`'s C descriptors),
the instance's `__dict__` through the C descriptor of its class, the base types' C methods (`dict.items(d)`,
`tuple.__getitem__(t, 0)`), nn.Module's own tables (`_parameters`, `_buffers`, `_modules`) read off the instance dict,
and torch's C tensor accessors with `__torch_function__` disabled (no subclass's Python override runs). What cannot be
read that way is unknown to the probe (None, or skipped), never read another way.
"""
import contextlib
import types

_MISSING = object()
_type_dict = type.__dict__["__dict__"].__get__  # a class's own mapping, without its metaclass's code
_type_mro = type.__dict__["__mro__"].__get__
_type_name = type.__dict__["__name__"].__get__
_GETSET = types.GetSetDescriptorType
_MEMBER = types.MemberDescriptorType
_dict_items = dict.items
_dict_values = dict.values


def mro(cls):
    return _type_mro(cls)


def class_dict(cls):
    """A class's own attributes (a read-only mapping), without its metaclass's code."""
    return _type_dict(cls)


def type_name(obj):
    """The name of `obj`'s class."""
    return _type_name(type(obj))


def class_names(obj):
    return [_type_name(c) for c in _type_mro(type(obj))]


def is_a(obj, cls):
    """`isinstance(obj, cls)` from the type alone: no `__class__` read, no `__instancecheck__`."""
    return cls in _type_mro(type(obj))


def is_dict(obj):
    return dict in _type_mro(type(obj))


def is_sequence(obj):
    """A list or a tuple (or a subclass: read through the base type's methods)."""
    m = _type_mro(type(obj))
    return list in m or tuple in m


def type_attr(cls, name, default=None):
    """The raw value `name` has in the class dicts of `cls`'s MRO (a descriptor is returned, not called)."""
    for c in _type_mro(cls):
        d = _type_dict(c)
        if name in d:
            return d[name]
    return default


def _is_descriptor(value):
    return type_attr(type(value), "__get__", _MISSING) is not _MISSING


_DICT_DESCRIPTORS = {}  # id(class) -> (class, its `__dict__` C descriptor or None): ids, since hashing a class may run its metaclass's code


def _dict_descriptor(cls):
    got = _DICT_DESCRIPTORS.get(id(cls))
    if got is not None and got[0] is cls:
        return got[1]
    found = None
    for c in _type_mro(cls):
        descr = _type_dict(c).get("__dict__")
        if descr is not None:
            # A C descriptor (a module's is a member); a class's own `__dict__` (a property) is code.
            found = descr if type(descr) is _GETSET or type(descr) is _MEMBER else None
            break
    if len(_DICT_DESCRIPTORS) < 4096:
        _DICT_DESCRIPTORS[id(cls)] = (cls, found)
    return found


def instance_dict(obj):
    """The instance's `__dict__` through its class's C descriptor; None where it has none, or where a class
    defines `__dict__` itself (a property: its code would run)."""
    cls = type(obj)
    descr = _dict_descriptor(cls)
    if descr is None:
        return None
    try:
        d = descr.__get__(obj, cls)
    except (TypeError, AttributeError):
        return None
    return d if type(d) is dict else None


def attr(obj, name, default=None):
    """`getattr(obj, name, default)` where it runs no code of the script's: a slot or a C type's attribute, the
    instance dict, or a plain class value. A property, `__getattr__`'s answer or a method is `default`. (Not for
    tensors: their C attributes dispatch to `__torch_function__`; see Tensors.)"""
    t = type_attr(type(obj), name, _MISSING)
    if t is not _MISSING and _is_descriptor(t):
        if type(t) is _MEMBER or type(t) is _GETSET:  # a __slots__ member, a C type's attribute: read in C
            try:
                return t.__get__(obj, type(obj))
            except AttributeError:
                return default
        if type_attr(type(t), "__set__", _MISSING) is not _MISSING or type_attr(type(t), "__delete__", _MISSING) is not _MISSING:
            return default  # a data descriptor (a property): it wins over the instance dict, and it is code
    d = instance_dict(obj)
    if d is not None and name in d:
        return d[name]
    if t is _MISSING or _is_descriptor(t):
        return default  # absent, or a method (code)
    return t


def items(d):
    """A dict's (or dict subclass's) items through dict's own C method: [] for anything else."""
    return list(_dict_items(d)) if is_dict(d) else []


def values(d):
    return list(_dict_values(d)) if is_dict(d) else []


def get(d, key, default=None):
    """`d[key]` for a string key of a dict (or subclass), comparing only string keys (no `__eq__` of the script's)."""
    if not is_dict(d):
        return default
    for k, v in _dict_items(d):
        if type(k) is str and k == key:
            return v
    return default


def first(seq):
    """The first element of a list or tuple (or subclass) through the base type's C method; None if empty."""
    m = _type_mro(type(seq))
    base = list if list in m else tuple if tuple in m else None
    if base is None or base.__len__(seq) == 0:
        return None
    return base.__getitem__(seq, 0)


def head(seq, n):
    """The first `n` elements of a list or tuple (or subclass), as a list."""
    m = _type_mro(type(seq))
    base = list if list in m else tuple if tuple in m else None
    if base is None:
        return []
    return list(base.__getitem__(seq, slice(0, n)))


def length(seq):
    m = _type_mro(type(seq))
    base = list if list in m else tuple if tuple in m else dict if dict in m else None
    return base.__len__(seq) if base is not None else None


# ---------- modules ----------


def _table(module, name):
    d = instance_dict(module)
    t = d.get(name) if d is not None else None
    return t if t is not None and is_dict(t) else None


def is_module(obj, Module):
    return Module in _type_mro(type(obj))


def own_parameters(module):
    """(name, parameter) of the module itself (its `_parameters` table), None entries left out."""
    t = _table(module, "_parameters")
    return [(k, v) for k, v in _dict_items(t) if v is not None] if t is not None else []


def own_buffers(module):
    t = _table(module, "_buffers")
    return [(k, v) for k, v in _dict_items(t) if v is not None] if t is not None else []


def children(module):
    """(name, child module) from its `_modules` table."""
    t = _table(module, "_modules")
    return [(k, v) for k, v in _dict_items(t) if v is not None] if t is not None else []


def named_modules(root, limit=100000):
    """(qualified name, module) of `root` and every module under it, each once (pre-order, as nn.Module's)."""
    out = []
    seen = set()
    todo = [("", root)]
    while todo and len(out) < limit:
        name, m = todo.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        out.append((name, m))
        kids = children(m)
        for k, c in reversed(kids):
            todo.append((name + "." + k if name else k, c))
    return out


def parameters(module, recurse=True):
    """Every parameter of the module (and of its submodules when `recurse`), each once."""
    mods = [m for _, m in named_modules(module)] if recurse else [module]
    out, seen = [], set()
    for m in mods:
        for _, p in own_parameters(m):
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def buffers(module):
    out, seen = [], set()
    for _, m in named_modules(module):
        for _, b in own_buffers(m):
            if id(b) not in seen:
                seen.add(id(b))
                out.append(b)
    return out


def has_parameters(module, limit=10000):
    """Whether the module or one under it holds a parameter (stops at the first)."""
    todo, seen = [module], set()
    while todo and len(seen) < limit:
        m = todo.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        if own_parameters(m):
            return True
        todo.extend(c for _, c in children(m))
    return False


# ---------- tensors ----------


def no_modes(torch, dispatch=False):
    """A context in which torch calls of the probe's run no `__torch_function__` of the script's, neither a tensor
    subclass's nor a torch function mode's (`DisableTorchFunction`; torch 1.x's leaves modes on, so its mode is set
    aside as torch's own `_no_torch_function_mode` does); with `dispatch`, no `__torch_dispatch__` mode either (the
    Python dispatch key excluded while it lasts). Nothing of the script's is called, and all is as before after."""
    c = torch._C
    stack = contextlib.ExitStack()
    off = getattr(c, "DisableTorchFunction", None)
    if off is not None:
        stack.enter_context(off())
    overrides = getattr(torch, "overrides", None)
    legacy_modes = getattr(overrides, "_no_torch_function_mode", None) if getattr(c, "DisableTorchFunctionSubclass", None) is None else None
    mode_on = getattr(c, "_is_torch_function_mode_enabled", None)
    if legacy_modes is not None and mode_on is not None and mode_on():
        stack.enter_context(legacy_modes())
    guard = getattr(c, "_DisableTorchDispatch", None) if dispatch else None
    if guard is not None:
        held = [guard()]  # a guard object (not a context manager): in force while it lives
        stack.callback(held.clear)
    return stack


class Tensors(object):
    """torch's C accessors of a tensor, with `__torch_function__` off while they run: a tensor subclass's Python
    override is never called. A tensor whose class (outside torch) defines `__torch_dispatch__` (its sizes may be
    Python code) or an uninitialized lazy parameter is not read (None)."""

    def __init__(self, torch):
        c = torch._C
        base = getattr(c, "TensorBase", None) or c._TensorBase
        self.Tensor = torch.Tensor
        self._numel = base.numel
        self._element_size = base.element_size
        bd = _type_dict(base)
        self._dtype = bd["dtype"].__get__
        self._requires_grad = bd["requires_grad"].__get__
        self.torch = torch
        parameter = getattr(getattr(torch.nn, "parameter", None), "UninitializedTensorMixin", None)
        self._uninitialized = parameter
        self._mode_on = getattr(c, "_is_torch_function_mode_enabled", None)
        self._ok_types = {}  # id(class) -> (class, readable)

    def readable(self, x):
        cls = type(x)
        got = self._ok_types.get(id(cls))
        ok = got[1] if got is not None and got[0] is cls else None
        if ok is None:
            m = _type_mro(cls)
            ok = self.Tensor in m and (self._uninitialized is None or self._uninitialized not in m)
            if ok:
                for c in m:
                    module = _type_dict(c).get("__module__") or ""
                    if "__torch_dispatch__" in _type_dict(c) and not (type(module) is str and module.startswith("torch")):
                        ok = False
                        break
            self._ok_types[id(cls)] = (cls, ok)
        return ok

    def disabled(self):
        """The context in which the accessors below run no `__torch_function__` (enter it around a batch of reads)."""
        return no_modes(self.torch)

    def modes_on(self):
        """Whether a torch function mode of the script's would still see the accessors (inside `disabled()`: torch
        1.x's guard leaves modes on; torch 2's turns them off)."""
        return self._mode_on is not None and bool(self._mode_on())

    def facts(self, x):
        """(numel, dtype, element size, requires_grad) of a readable tensor, inside `disabled()`; None otherwise (also
        while a torch function mode would see the read)."""
        if not self.readable(x) or self.modes_on():
            return None
        return self._numel(x), self._dtype(x), self._element_size(x), self._requires_grad(x)

