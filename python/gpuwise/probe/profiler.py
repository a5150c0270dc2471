"""torch's profiler as the probe's window drives it (window.py decides when): built, started and stopped on one thread,
its `ProfilerStep#N` spans, and the script's own profilers, which the probe's never meets.

The script's profilers are seen through the one method the probe wraps, `profile._prepare_trace`, which every profiler
of torch's calls first (patches.py): kept by id, with a weak reference, while they run.
"""
import inspect
import json
import os
import weakref

from . import safe


def _legacy_profiler(torch):
    """torch's legacy CPU profiler class, where every piece this module uses exists (else None: Kineto only)."""
    try:
        import torch.autograd.profiler_legacy as legacy
    except ImportError:
        return None
    needed = (getattr(torch.autograd, "_enable_profiler_legacy", None), getattr(torch.autograd, "_disable_profiler_legacy", None), getattr(legacy, "_parse_legacy_records", None))
    if any(x is None for x in needed) or not hasattr(legacy.profile, "_start_trace"):
        return None
    return legacy.profile


def profiler_classes(torch):
    """(the autograd profiler class, the legacy CPU profiler's or None, the former's constructor parameters), read at
    torch's import (the legacy module imported then, never from a hook)."""
    cls = torch.autograd.profiler.profile
    legacy = _legacy_profiler(torch)
    try:
        params = frozenset(inspect.signature(cls.__init__).parameters)
    except (TypeError, ValueError):
        params = frozenset(("use_cuda", "use_kineto", "record_shapes"))
    return cls, legacy, params


class Profiler(object):
    def __init__(self):
        self.torch = None
        self.profiler_class, self.legacy, self.params = None, None, frozenset()
        self.own = None  # the probe's profiler from its construction to its stop (the guard lets it through)
        self.opening = False
        self.user_profilers = {}  # id -> weak reference: the script's profilers prepared
        self.span = None  # the open `ProfilerStep#N` span

    def install(self, torch, classes):
        """At torch's import: torch and `profiler_classes(torch)`."""
        self.torch = torch
        self.profiler_class, self.legacy, self.params = classes

    def free(self):
        """No profiler of the script's is enabled on this thread or prepared and not stopped: the window may open."""
        torch = self.torch
        try:
            if torch.autograd._profiler_enabled():
                return False
        except Exception:
            return False
        for ref in list(self.user_profilers.values()):
            p = ref()
            if p is not None and safe.attr(p, "entered") is True and safe.attr(p, "kineto_results") is None:
                return False
        return True

    def lets_through(self, prof):
        """Whether the profiler guard (patches.py) lets `prof` prepare without a word: it is the probe's own."""
        return self.opening or prof is self.own

    def note_user_profiler(self, prof):
        """The script prepares `prof`. By id, with a weak reference: a WeakSet would hash it (a subclass's __hash__ is
        the script's)."""
        key, profilers = id(prof), self.user_profilers
        try:
            profilers[key] = weakref.ref(prof, lambda r: profilers.pop(key, None) if profilers.get(key) is r else None)
        except TypeError:
            pass

    def is_legacy(self, prof):
        legacy = self.legacy
        return legacy is not None and isinstance(prof, legacy)

    def start(self, cuda_on, record_shapes):
        """Starts a profiler on this thread: it, or None (nothing started) when torch refuses (another profiler)."""
        legacy = self.legacy
        if not cuda_on and legacy is not None:
            # A process without CUDA: the legacy profiler, which records the CPU ops and never starts Kineto. On a
            # CUDA build, Kineto initialises the driver and starts threads of its own: a process forked afterwards
            # that exits normally then aborts joining them, and one that trains on a thread other than the one that
            # imported torch gets Kineto's error on stderr.
            kp = legacy(record_shapes=record_shapes)
            self.own = kp
            try:
                kp._start_trace()
            except RuntimeError:
                self.own = None
                return None
            return kp
        # The autograd profiler that torch.profiler.profile drives, built here with the options it would pass: going
        # through torch.profiler would import torch._inductor (which can deadlock with a thread of the script
        # importing torch._dynamo), may set environment variables, and on torch 2.x warns on the script's stderr
        # that it "clears events at the end of each cycle". The distributed metadata it adds: add_metadata.
        kp = self.profiler_class(**self.options(cuda_on, record_shapes))
        self.own = kp
        self.opening = True  # the profiler guard (patches.py) lets this one through
        try:
            kp._prepare_trace()
            kp._start_trace()
        except RuntimeError:
            self.own = None
            return None
        finally:
            self.opening = False
        return kp

    def add_metadata(self):
        """The metadata torch.profiler's start_trace adds (analyze groups ranks' traces by it); only Kineto keeps it (the
        shim of a torch without it logs a warning on stderr instead)."""
        torch = self.torch
        info = self._distributed_info() if torch.autograd.kineto_available() else None
        if info is not None:
            try:
                torch.autograd._add_metadata_json("distributedInfo", json.dumps(info))
            except Exception:
                pass

    def options(self, cuda_on, record_shapes):
        """The keyword arguments of `torch.autograd.profiler.profile` for a Kineto trace of the CPU (and CUDA), in the
        spelling of this torch: `use_device="cuda"` from 2.4 (`use_cuda` then warns it is deprecated), else
        `use_cuda`."""
        params = self.params
        opts = {"use_kineto": True, "record_shapes": record_shapes}
        if "use_cpu" in params:
            opts["use_cpu"] = True
        if cuda_on:
            if "use_device" in params:
                opts["use_device"] = "cuda"
            else:
                opts["use_cuda"] = True
        return opts

    def _distributed_info(self):
        dist = getattr(self.torch, "distributed", None)
        try:
            if dist is None or not dist.is_available() or not dist.is_initialized():
                return None
            return {"backend": dist.get_backend(), "rank": dist.get_rank(), "world_size": dist.get_world_size()}
        except Exception:
            return None

    def _no_dispatch(self):
        """The context in which the probe's own ops run (the ProfilerStep spans' record_function): no torch function or
        dispatch mode of the script's sees them (an op-counting TorchDispatchMode would count them)."""
        return safe.no_modes(self.torch, dispatch=True)

    def enter_span(self, step):
        # The same `ProfilerStep#N` spans torch.profiler's schedule writes, which analyze reads as steps.
        with self._no_dispatch():  # (torch 1.x's record_function also makes a tensor when it is built)
            self.span = self.torch.autograd.profiler.record_function("ProfilerStep#%d" % step)
            self.span.__enter__()

    def exit_span(self):
        if self.span is not None:
            span, self.span = self.span, None
            with self._no_dispatch():
                span.__exit__(None, None, None)

    def drop_span(self):
        """In a forked child: the parent's span is not ended there."""
        self.span = None

    def stop(self, prof, cuda, why):
        """Stops `prof` (a CUDA synchronisation and the profiler's own stop, no more): (its results, whether CUPTI was
        detached)."""
        torch = self.torch
        if cuda:
            torch.cuda.synchronize()
        if self.is_legacy(prof):
            results, detach = torch.autograd._disable_profiler_legacy(), False
        else:
            # CUPTI left attached after a stop slows every later launch (a compiled ResNet-50 on an H200: 23-24 ms a
            # step before the window, 30-32 after; detached, at the plain pace). Kineto detaches it when
            # TEARDOWN_CUPTI=1 at the stop; set for that call only (the script's environment is its own again after).
            detach = cuda and self._cupti_detach_wanted(why)
            if detach:
                os.environ["TEARDOWN_CUPTI"] = "1"
            try:
                results = torch.autograd._disable_profiler()
            finally:
                if detach:
                    del os.environ["TEARDOWN_CUPTI"]
            if detach:
                # Kineto finalises CUPTI in its callback on the next CUDA runtime call: made here, so that no profiler
                # the script starts right after ours meets a teardown still pending (it then records no GPU event).
                torch.cuda.synchronize()
            stop_hook = getattr(torch.autograd.profiler, "_run_on_profiler_stop", None)
            if stop_hook is not None:
                stop_hook()
        self.own = None
        return results, detach

    def _cupti_detach_wanted(self, why):
        """Whether the window's stop also detaches CUPTI from the process. Not when a profiler of the script's takes
        over from ours (a teardown then races with its start: it recorded no GPU event on an H100), nor where the
        script or torch chose for itself (TEARDOWN_CUPTI set: torch sets 0 where inductor captures CUDA graphs), nor
        with a CUDA before 12.6, where re-attaching after a teardown could crash under CUDA graphs."""
        if why not in ("steps", "time") or "TEARDOWN_CUPTI" in os.environ:
            return False
        try:
            major, minor = (int(x) for x in str(self.torch.version.cuda).split(".")[:2])
        except (TypeError, ValueError):
            return False
        return (major, minor) >= (12, 6)

    def disable_inherited(self, prof):
        """In a child forked inside the window, from its thread: the child inherits the thread's
        enabled profiler (its own would fail "already enabled"). The CPU profiler's state is the thread's alone: taken
        back. (Kineto's, in a CUDA process, is left: stopping it in a child could meet the parent's CUPTI state.)"""
        if self.is_legacy(prof):
            try:
                self.torch.autograd._disable_profiler_legacy()
            except Exception:
                pass
