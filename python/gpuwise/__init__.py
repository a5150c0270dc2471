"""gpuwise's in-process probe for PyTorch training (see docs/reference/doctor.md, "The probe").

`gpuwise doctor -- CMD` puts `python/gpuwise/boot` (a sitecustomize) and `python/` on PYTHONPATH;
the sitecustomize loads this package as `_gpuwise_probe` (the name `gpuwise` stays the user's: a
gpuwise.py next to their script wins) and calls `probe.activate()`, which does nothing unless
GPUWISE_SOCKET or GPUWISE_RUN_DIR is set and hooks into torch only once the script imports it.
No dependency beyond torch; the probe never imports torch itself.
"""

__version__ = "0.2.0"
PROTOCOL_VERSION = 3


def step():
    """Mark the end of a training step, for loops the probe cannot see through torch.optim (a
    hand-written update, inference). Once called, these marks alone count as steps. Outside
    `gpuwise doctor` it does nothing; scripts that may run without gpuwise on the path can use
    `try: import gpuwise` / `except ImportError: gpuwise = None`."""
    import sys

    # The probe doctor started (boot/sitecustomize.py), also when this is a pip-installed copy.
    probe = sys.modules.get("_gpuwise_probe.probe")
    if probe is None:
        from . import probe
    probe.mark_step()


def load_ipython_extension(ipython):
    """`%load_ext gpuwise`: the `%gpuwise monitor` and `%%gpuwise doctor` magics (gpuwise/notebook.py)."""
    from gpuwise import notebook

    notebook.load(ipython)


def memory_report(path=None):
    """In a notebook: explain a CUDA memory snapshot inline (gpuwise/notebook.py)."""
    from gpuwise import notebook

    return notebook.memory_report(path)
