"""gpuwise boot: activates the probe, then runs any sitecustomize that this one shadows.

Python imports the first `sitecustomize` on sys.path; gpuwise doctor puts this folder first on
PYTHONPATH, so this file finds the one the user had (later on sys.path) and runs it too.
Nothing here may break the user's program: every failure is reported once on stderr and ignored.
"""
import os as _os
import sys as _sys


def _gpuwise_activate():
    try:
        from gpuwise import probe

        probe.activate()
    except Exception as e:  # fail-open: the user's program must run unchanged
        _sys.stderr.write("gpuwise probe: not active (%s: %s)\n" % (type(e).__name__, e))


def _gpuwise_chain():
    """Runs the next sitecustomize on sys.path (the one this file shadows), if there is one."""
    try:
        import importlib.machinery
        import importlib.util

        here = _os.path.dirname(_os.path.abspath(__file__))
        rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.origin is None or not spec.has_location:
            return
        if _os.path.abspath(spec.origin) == _os.path.abspath(__file__):
            return
        chained = importlib.util.spec_from_file_location("_gpuwise_chained_sitecustomize", spec.origin)
        module = importlib.util.module_from_spec(chained)
        _sys.modules["_gpuwise_chained_sitecustomize"] = module
        chained.loader.exec_module(module)
        # Code that inspects `sitecustomize` attributes sees the user's ones as well.
        for name, value in vars(module).items():
            if not name.startswith("__") and name not in globals():
                globals()[name] = value
    except Exception as e:
        # site.py would print such an error and go on; do the same.
        _sys.stderr.write("Error in sitecustomize (chained by gpuwise); set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(e).__name__, e))


_gpuwise_activate()
_gpuwise_chain()
