"""The step counter of a process in a small file of the run directory (`beacon-PID`), mapped into the process.

The records are written in batches (records.py), so a process killed by SIGKILL (the OOM killer, a launcher) takes its
last queued step records with it. Its counter does not: each step's number is one store into a shared mapping of the
file, with no system call, and the kernel keeps the page after the process is gone. doctor reads it for a process
that ended without an end record (src/io/beacons.ts). The file is 8 bytes, the step as an unsigned integer in the
machine's order (little-endian on x86-64 and aarch64). No descriptor stays open (the mapping outlives the one used to
make it), so a script that counts or closes its descriptors sees none of the probe's; where the mapping cannot be
made, there is no counter and nothing else changes.
"""
import ctypes
import os
import sys

SIZE = 8
_PROT_READ_WRITE = 0x1 | 0x2
_MAP_SHARED = 0x01


def _lookup():
    """(mmap, munmap) from the process's own symbols (`ctypes.pythonapi`, opened when ctypes was imported), looked up
    when the probe is imported (doctor's boot): a library opened or a symbol looked up after the script started is an
    event its audit hooks see. None where they cannot be found."""
    try:
        lib = ctypes.pythonapi
        mmap, munmap = lib.mmap, lib.munmap
    except (AttributeError, OSError):
        return None
    mmap.restype = ctypes.c_void_p
    mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    munmap.restype = ctypes.c_int
    munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return mmap, munmap


_MMAP = _lookup()
# The counter's view of the mapping: a pointer made by `ctypes.cast` (`from_address` is an audit event, cdata).
_CELL = ctypes.POINTER(ctypes.c_uint64)


class StepBeacon(object):
    """This process's counter: mapped at its first step, unmapped at the probe's end or in a forked child."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.cell = None  # the mapped counter (ctypes.c_uint64), once opened
        self.addr = None
        self.failed = False  # no counter for this process (no run directory, no mapping)

    def set(self, step):
        """Step `step` ended: one store (the first call of a process maps its file)."""
        cell = self.cell
        if cell is None:
            if self.failed or not self._open():
                return
            cell = self.cell
        cell[0] = step

    def _open(self):
        if not self.run_dir or not sys.platform.startswith("linux"):
            self.failed = True
            return False
        if _MMAP is None:
            self.failed = True
            return False
        path = os.path.join(self.run_dir, "beacon-%d" % os.getpid())
        try:
            os.makedirs(self.run_dir, exist_ok=True)  # made by the first records' write otherwise, maybe later
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError:
            self.failed = True
            return False
        try:
            os.write(fd, b"\0" * SIZE)  # its size (os.ftruncate is an audit event the script would see)
            addr = _MMAP[0](None, SIZE, _PROT_READ_WRITE, _MAP_SHARED, fd, 0)
        except OSError:
            addr = None
        finally:
            os.close(fd)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            self.failed = True
            return False
        self.addr = addr
        self.cell = ctypes.cast(ctypes.c_void_p(addr), _CELL)
        return True

    def after_fork(self):
        """In a forked child: the parent's mapping is shared with the parent's file; the child counts in its own."""
        self.close()
        self.failed = False

    def close(self):
        addr, self.addr, self.cell = self.addr, None, None
        if addr is not None and _MMAP is not None:
            _MMAP[1](addr, SIZE)
