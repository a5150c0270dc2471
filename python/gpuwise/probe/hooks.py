"""torch's hook tables, used without taking a hook handle id of the script's.

`torch.utils.hooks.RemovableHandle` numbers every handle from one global counter (`RemovableHandle.next_id`): a hook
the probe registers through torch's `register_*` functions moves the ids of every handle the script makes after it
(its first handle is #2 instead of #0, and code that keys its own tables by `handle.id` sees other numbers). So the
probe puts its global hooks straight into torch's tables (`_global_forward_pre_hooks`, ...) under keys of its own,
negative integers that no handle ever gets (torch only iterates the tables, or looks a handle's id up in them), and
takes them out again: the counter never moves. Where a table is not where this torch keeps it, the hook goes through
torch's `register_*` function and the counter is set back when the probe removes it, if nothing took an id since.
"""
import collections
import itertools
import sys

from . import safe

_DICTS = (dict, collections.OrderedDict)
# The probe's keys: negative, far from any id a handle gets (ids count up from 0).
_KEYS = itertools.count(-(1 << 40), -1)


class Hook(object):
    """A hook in one or more of torch's tables under the probe's key; `remove()` takes it out (idempotent)."""

    def __init__(self, key, tables):
        self.key = key
        self.tables = tables

    def remove(self):
        tables, self.tables = self.tables, ()
        for t in tables:
            t.pop(self.key, None)


class _Registered(object):
    """A hook registered through torch's own function (no table found): the handle id counter is set back when it
    is removed, if no other handle was made since."""

    def __init__(self, handle):
        self.handle = handle

    def remove(self):
        h, self.handle = self.handle, None
        if h is None:
            return
        h.remove()
        rollback(h)


def rollback(handle):
    """Sets the handle id counter back over `handle`'s id when it was the last id taken."""
    cls = type(handle)
    hid = getattr(handle, "id", None)
    if type(hid) is int and cls.__dict__.get("next_id") == hid + 1:
        cls.next_id = hid


def add(table, hook, flags=()):
    """Puts `hook` into `table` (a dict of torch's) under a new key of the probe's, marking it in each dict of
    `flags` (torch's "with kwargs" / "always called" sets, keyed by the same id)."""
    key = next(_KEYS)
    table[key] = hook
    for f in flags:
        f[key] = True
    return Hook(key, [table] + list(flags))


def module_tables(torch):
    """torch.nn.modules.module, where its global hook tables are."""
    return getattr(torch.nn.modules, "module", None)


def global_forward_pre_hook(torch, hook):
    """`register_module_forward_pre_hook(hook)` without a handle id; None where this torch has neither."""
    mod = module_tables(torch)
    table = getattr(mod, "_global_forward_pre_hooks", None)
    if type(table) in _DICTS:
        return add(table, hook)
    register = getattr(mod, "register_module_forward_pre_hook", None)
    return _Registered(register(hook)) if register is not None else None


def global_forward_hook(torch, hook, always_call=False):
    """`register_module_forward_hook(hook, always_call=...)` without a handle id (torch < 2.0 has no always_call:
    an ordinary forward hook)."""
    mod = module_tables(torch)
    table = getattr(mod, "_global_forward_hooks", None)
    always = getattr(mod, "_global_forward_hooks_always_called", None)
    if type(table) in _DICTS:
        return add(table, hook, [always] if always_call and type(always) in _DICTS else [])
    register = getattr(mod, "register_module_forward_hook", None)
    if register is None:
        return None
    try:
        return _Registered(register(hook, always_call=always_call) if always_call else register(hook))
    except TypeError:
        return _Registered(register(hook))


def optimizer_post_hook(torch, hook):
    """The global optimizer step post-hook (torch >= 2.0) without a handle id; None where torch has none."""
    opt_mod = sys.modules.get("torch.optim.optimizer")
    table = getattr(opt_mod, "_global_optimizer_post_hooks", None)
    if type(table) in _DICTS:
        return add(table, hook)
    register = getattr(torch.optim.Optimizer, "register_optimizer_step_post_hook", None) or getattr(opt_mod, "register_optimizer_step_post_hook", None)
    return _Registered(register(hook)) if register is not None else None


def instance_forward_pre_hook(module, hook):
    """A forward pre-hook with keyword arguments on one module (torch.compile's wrapper: model.py), without a
    handle id: into its `_forward_pre_hooks` table, marked in `_forward_pre_hooks_with_kwargs`; else through
    `register_forward_pre_hook`."""
    own = safe.instance_dict(module) or {}
    table, kw = own.get("_forward_pre_hooks"), own.get("_forward_pre_hooks_with_kwargs")
    if type(table) in _DICTS and type(kw) in _DICTS:
        return add(table, hook, [kw])
    try:
        return _Registered(module.register_forward_pre_hook(hook, with_kwargs=True))
    except TypeError:  # torch < 2.0
        return _Registered(module.register_forward_pre_hook(lambda mod, args: hook(mod, args, {})))
