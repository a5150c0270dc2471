"""gpuwise's site hook: `gpuwise-probe.pth` imports this module at the start of a Python process only while a
`gpuwise doctor` of this user runs (its registry folder exists), and takes it out of sys.modules again at once.

It attaches the probe when the process belongs to a doctor run (gpuwise/boot/attach.py: the process's ancestry leads
to doctor), whatever the command did to the environment: `env PYTHONPATH=...`, shell scripts and make, `python -I`
or `-E`. Otherwise nothing of gpuwise's stays loaded. A failure is said once on stderr and the program runs on.
"""
import os
import sys


def run():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        import importlib.util

        spec = importlib.util.spec_from_file_location("_gpuwise_attach", os.path.join(here, "gpuwise", "boot", "attach.py"))
        attach = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(attach)
        attached = attach.attach("site")
        if attached is not None:
            attach.offer_import(*attached)
    except Exception as e:  # fail-open: the user's program must run unchanged
        sys.stderr.write("gpuwise probe: not active (%s: %s)\n" % (type(e).__name__, e))
