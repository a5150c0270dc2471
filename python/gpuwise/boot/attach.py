"""Which `gpuwise doctor` run this Python process belongs to, found without reading its environment.

doctor writes one entry per run in its registry, `/tmp/gpuwise-<uid>/run-<doctor's pid>.json` (a folder only that
user can write), before it starts the command. A Python process belongs to the run when doctor is one of its
ancestors: the chain of parent pids from /proc leads there, whatever the command did to the environment on the way
(`env PYTHONPATH=...`, a shell script, make, `python -I`). The entry holds doctor's start time, so a stale entry left by a
doctor that was killed never matches a new process that reuses its pid.

Both ways in use this module, loaded by file path so that nothing named `gpuwise` is imported behind the script's back:
the site hook (`gpuwise-probe.pth` in site-packages, which the wheel installs: `route="site"`) and the boot
sitecustomize that doctor puts on PYTHONPATH when the command's Python has no site hook (`route="path"`). Standard
library only; every failure means "not attached".
"""
import os
import sys

REGISTRY_SCHEMA = 1
# The probe package's name in sys.modules: `gpuwise` stays the user's (a gpuwise.py beside the script wins).
PRIVATE_NAME = "_gpuwise_probe"
# Ancestors walked at most (a launcher, a shell and make add a few each).
MAX_DEPTH = 64


def registry_dir(uid=None):
    return "/tmp/gpuwise-%d" % (os.getuid() if uid is None else uid)


def _parent_and_start(pid):
    """(parent pid, start time in clock ticks) of `pid`, from /proc/PID/stat (the command name may hold spaces)."""
    with open("/proc/%d/stat" % pid, "rb") as f:
        data = f.read()
    fields = data[data.rindex(b")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def _registered_runs(folder):
    """doctor pids with an entry in the registry; empty when the folder is missing or not the user's own."""
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    runs = {}
    for name in names:
        if name.startswith("run-") and name.endswith(".json"):
            try:
                runs[int(name[4:-5])] = os.path.join(folder, name)
            except ValueError:
                pass
    if runs:
        st = os.stat(folder)
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return {}  # another user could have written it: never trust it
    return runs


def find_run():
    """(entry, ancestors) of the doctor run this process belongs to, or None. `ancestors`: the pids between this process
    and doctor, nearest first (the command's own processes)."""
    if not sys.platform.startswith("linux"):
        return None
    folder = registry_dir()
    runs = _registered_runs(folder)
    if not runs:
        return None
    ancestors = []
    pid = os.getpid()
    try:
        for _ in range(MAX_DEPTH):
            parent, _start = _parent_and_start(pid)
            if parent in runs:
                entry = _read_entry(runs[parent])
                if entry is None or entry.get("doctorStartTicks") != _parent_and_start(parent)[1]:
                    return None
                entry["registryDir"] = folder
                return entry, ancestors
            if parent <= 1:
                return None
            ancestors.append(parent)
            pid = parent
    except (OSError, ValueError, IndexError):
        return None  # an ancestor gone meanwhile, or a /proc this process may not read: not doctor's
    return None


def _read_entry(path):
    import json

    try:
        with open(path, "rb") as f:
            entry = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("schemaVersion") != REGISTRY_SCHEMA:
        return None
    return entry


def load_probe(package_dir):
    """The package in `package_dir` loaded as `_gpuwise_probe`, and its probe module."""
    import importlib
    import importlib.util

    spec = importlib.util.spec_from_file_location(PRIVATE_NAME, os.path.join(package_dir, "__init__.py"), submodule_search_locations=[package_dir])
    package = importlib.util.module_from_spec(spec)
    sys.modules[PRIVATE_NAME] = package
    try:
        spec.loader.exec_module(package)
        probe = importlib.import_module(PRIVATE_NAME + ".probe")
    except BaseException:
        unload_probe()
        raise
    return package, probe


def unload_probe():
    for key in list(sys.modules):
        if key == PRIVATE_NAME or key.startswith(PRIVATE_NAME + "."):
            del sys.modules[key]


def attach(route):
    """(package, probe) activated in this process when it belongs to a doctor run and is one to probe; else None, with
    nothing of gpuwise's left loaded. A process the other route attached already is left as it is."""
    if PRIVATE_NAME in sys.modules:
        return None
    found = find_run()
    if found is None:
        return None
    entry, ancestors = found
    package, probe = load_probe(os.path.join(entry["probeRoot"], "gpuwise"))
    active = probe.activate_in_run(entry, ancestors, route)
    if active is None:
        unload_probe()
        return None
    return package, active


class _FallbackFinder(object):
    """Last on sys.meta_path: an `import gpuwise` that nothing else resolves (no module of the user's, no pip-installed
    gpuwise) gets the package already loaded, so `gpuwise.step()` is the running probe rather than a second, idle copy."""

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
        prefix = PRIVATE_NAME + "."
        for key, sub in list(sys.modules.items()):
            if key.startswith(prefix):
                sys.modules.setdefault("gpuwise." + key[len(prefix) :], sub)


def offer_import(package, probe):
    """Only when asked (`doctor --importable`): an `import gpuwise` that fails without doctor must fail under it too."""
    if probe.cfg.importable:
        sys.meta_path.append(_FallbackFinder(package))
