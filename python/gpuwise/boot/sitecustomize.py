"""gpuwise boot: attaches the probe, then runs any sitecustomize that this one shadows.

doctor puts this folder first on PYTHONPATH when the command's Python has no gpuwise site hook (the wheel's
`gpuwise-probe.pth`). Python imports the first `sitecustomize` on sys.path, so this file finds the one the user had
(later on sys.path) and runs it too. Which run the process belongs to comes from doctor's registry and the process's
ancestry (attach.py), not from the environment. A process started with GPUWISE_SOCKET or GPUWISE_RUN_DIR in its
environment (the tests, the benches: the probe's direct interface) is probed from those instead. Nothing here may
break the user's program: every failure is reported once on stderr and ignored.
"""
import os as _os
import sys as _sys

_GPUWISE_ATTACH_NAME = "_gpuwise_attach"


def _gpuwise_attach_module(here):
    """attach.py of this folder, loaded by path and kept out of sys.modules."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(_GPUWISE_ATTACH_NAME, _os.path.join(here, "attach.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gpuwise_direct(attach, here):
    """The probe's direct interface: settings in the environment (GPUWISE_SOCKET or GPUWISE_RUN_DIR)."""
    if not (_os.environ.get("GPUWISE_SOCKET") or _os.environ.get("GPUWISE_RUN_DIR")):
        return None
    package, probe = attach.load_probe(_os.path.dirname(here))
    active = probe.activate(boot_dir=here)
    if active is None:
        attach.unload_probe()
        return None
    return package, active


def _gpuwise_activate():
    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        attach = _gpuwise_attach_module(here)
        attached = attach.attach("path") or _gpuwise_direct(attach, here)
        if attached is not None:
            attach.offer_import(*attached)
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
        chained = importlib.util.spec_from_file_location("sitecustomize", spec.origin)
        module = importlib.util.module_from_spec(chained)
        chained.loader.exec_module(module)
        # The module `sitecustomize` is then the user's own, as without doctor: the import that is running this file
        # takes whatever sys.modules holds under the name when it ends.
        _sys.modules["sitecustomize"] = module
    except Exception as e:
        # What site.py does with an error of the user's sitecustomize, word for word.
        if _sys.flags.verbose:
            _sys.excepthook(*_sys.exc_info())
        else:
            _sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (e.__class__.__name__, e))


_gpuwise_activate()
_gpuwise_chain()
