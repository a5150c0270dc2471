"""gpuwise's in-process probe for PyTorch training (see docs/doctor.md).

`gpuwise doctor -- CMD` puts `python/gpuwise/boot` (a sitecustomize) and `python/` on PYTHONPATH;
the sitecustomize calls `gpuwise.probe.activate()`, which does nothing unless GPUWISE_SOCKET or
GPUWISE_RUN_DIR is set and hooks into torch only once the script imports it.
No dependency beyond torch; the probe never imports torch itself.
"""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
