"""gpuwise boot: activates the probe, then runs any sitecustomize that this one shadows.

Python imports the first `sitecustomize` on sys.path; gpuwise doctor puts this folder (alone) first
on PYTHONPATH, so this file finds the one the user had (later on sys.path) and runs it too.
The probe package is loaded under a private name: `gpuwise` may be the user's own module (a
gpuwise.py next to the script comes first on sys.path, but only once the script starts, after this
has run). Nothing here may break the user's program: every failure is reported once on stderr and
ignored.
"""
import os as _os
import sys as _sys

# gpuwise/__init__.py's step() looks the running probe up by this name too.
_GPUWISE_PRIVATE_NAME = "_gpuwise_probe"


class _GpuwiseFallbackFinder(object):
    """Last on sys.meta_path: an `import gpuwise` that nothing else resolves (no module of the user's,
    no pip-installed gpuwise) gets the package already loaded, so `gpuwise.step()` and
    `gpuwise.probe` are the running probe rather than a second, idle copy."""

    def __init__(self, package):
        self.package = package

    def find_spec(self, name, path=None, target=None):
        if name != "gpuwise":
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        return self.package

    def exec_module(self, module):
        # Its submodules already loaded answer to the public name too (`import gpuwise.probe`).
        prefix = _GPUWISE_PRIVATE_NAME + "."
        for key, sub in list(_sys.modules.items()):
            if key.startswith(prefix):
                _sys.modules.setdefault("gpuwise." + key[len(prefix):], sub)


def _gpuwise_load_probe():
    """The package that holds this boot folder, loaded as `_gpuwise_probe`, and its probe module."""
    import importlib
    import importlib.util

    package_dir = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        _GPUWISE_PRIVATE_NAME, _os.path.join(package_dir, "__init__.py"), submodule_search_locations=[package_dir]
    )
    package = importlib.util.module_from_spec(spec)
    _sys.modules[_GPUWISE_PRIVATE_NAME] = package
    try:
        spec.loader.exec_module(package)
        probe = importlib.import_module(_GPUWISE_PRIVATE_NAME + ".probe")
    except BaseException:
        _gpuwise_unload()
        raise
    return package, probe


def _gpuwise_unload():
    for key in list(_sys.modules):
        if key == _GPUWISE_PRIVATE_NAME or key.startswith(_GPUWISE_PRIVATE_NAME + "."):
            del _sys.modules[key]


def _gpuwise_activate():
    """The probe, when doctor started this process (its variables set) and it is one to probe (probe/config.py);
    otherwise nothing of gpuwise's stays loaded."""
    if not (_os.environ.get("GPUWISE_SOCKET") or _os.environ.get("GPUWISE_RUN_DIR")):
        return
    # Read before activate() takes doctor's variables out of the script's view.
    importable = _os.environ.get("GPUWISE_IMPORTABLE") == "1"
    try:
        package, probe = _gpuwise_load_probe()
        if probe.activate(boot_dir=_os.path.dirname(_os.path.abspath(__file__))) is None:
            _gpuwise_unload()
            return
        # Only when asked (`doctor --importable`): an `import gpuwise` that fails without doctor must fail under it too.
        if importable:
            _sys.meta_path.append(_GpuwiseFallbackFinder(package))
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
