"""The fields of the records about the process's life that are more than a few values: `hello` and `exception`."""
import os
import platform
import sys

from .. import __version__
from . import safe


def hello_fields(torch, gpu, cfg, step_hook):
    """The `hello` record: the probe, Python, torch, CUDA as this process uses it, and doctor's settings."""
    cudnn = None
    try:
        # Loading cuDNN to ask its version is left to processes that use CUDA already (gpu.announce_fields).
        cudnn = torch.backends.cudnn.version() if torch is not None and gpu is not None and gpu.on() else None
    except Exception:
        pass
    return {
        "probeVersion": __version__,
        "python": platform.python_version(),
        "torch": getattr(torch, "__version__", None),
        "cudnn": cudnn,
        "cuda": gpu.announce_fields() if gpu is not None else {"available": False, "initialized": False, "version": None, "devices": [], "currentDevice": None},
        "hostname": os.uname().nodename,  # (socket.gethostname() is an audit event the script would see)
        "argv": list(sys.argv),
        "localRank": cfg.local_rank,
        "worldSize": cfg.world_size,
        "stepHook": step_hook,
        "profileAt": cfg.profile_at,
        "profileSteps": cfg.profile_steps,
        "maxSteps": cfg.max_steps,
    }


def _plain_arg(a):
    """An exception argument whose text is C's to make (no `__str__` or `__repr__` of the script's)."""
    t = type(a)
    if a is None or t in (str, int, float, bool):
        return True
    return t is tuple and all(x is None or type(x) in (str, int, float, bool) for x in a)


def exception_fields(value):
    """(type name, message, out of memory) of an exception, read without its own `__str__` (the script's code): its
    arguments when they are text, else its type's name."""
    name = safe.type_name(value)
    args = safe.attr(value, "args", ())
    plain = safe.head(args, 8)
    message = BaseException.__str__(value) if all(_plain_arg(a) for a in plain) else name
    # cuBLAS and cuDNN fail their own workspace allocations with ALLOC_FAILED: memory ran out as well.
    oom = name == "OutOfMemoryError" or "out of memory" in message.lower() or "STATUS_ALLOC_FAILED" in message
    return name, message, oom
