"""A profiler window's files, written by the background work (background.py) once the window stopped: the trace (Kineto's,
or the legacy profiler's JSON) and the allocator's snapshot. A file that cannot be written is the window's loss, not
the probe's error: the `profile-end` record says why."""
import contextlib
import os
import pickle
import sys
import time
import warnings

class TraceUnavailable(object):
    """A window whose trace could not be written, and why (the `profile-end` record's `traceError`)."""

    def __init__(self, why):
        self.why = why


def _written(path, write, *args):
    """(path, None) once `write(*args)` wrote `path`, else (None, why): a TraceUnavailable it returned, or an OSError
    (a full disk, a run folder removed, descriptors the script closed under the writer: os.closerange while the export
    runs), which is the window's loss, not the probe's error: what was written is removed. (None, None) without a
    path (nothing to write)."""
    if path is None:
        return None, None
    try:
        got = write(*args)
    except OSError as e:
        try:
            os.remove(path)
        except OSError:
            pass
        return None, "%s could not be written: %s" % (os.path.basename(path), e)
    return (None, got.why) if isinstance(got, TraceUnavailable) else (got, None)


def _matched_ranges(thread_records):
    """The legacy profiler's records, per thread, without the range ends ("pop") whose start ("push") the same
    thread did not record before them in the window."""
    out = []
    for records in thread_records:
        pushed = set()
        kept = []
        for r in records:
            kind = r.kind()
            if kind == "push":
                pushed.add((r.handle(), r.node_id()))
            elif kind == "pop" and (r.handle(), r.node_id()) not in pushed:
                continue
            kept.append(r)
        out.append(kept)
    return out


@contextlib.contextmanager
def _quiet_encoding():
    """Under `-X warn_default_encoding`, torch's trace writer (an `open()` without an encoding) would warn on the
    script's stderr: the EncodingWarning is ignored while it writes. Only then: `catch_warnings` swaps the process's
    filter list, which a filter the script sets meanwhile from another thread would not outlive."""
    if not getattr(sys.flags, "warn_default_encoding", 0):
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EncodingWarning)  # noqa: F821 (Python >= 3.10, as the flag)
        yield


def write_trace(torch, legacy, prof, results, path):
    """The trace of a stopped profiler written to `path` (the path, or a TraceUnavailable). `legacy`: the legacy CPU
    profiler's class when `prof` is one, else None."""
    from torch.autograd.profiler_util import EventList

    if legacy is not None:
        # The legacy parser asserts that every range a thread ends was started on that thread in the window; a
        # range started before the window (the optimizer step's, around the hook that opened it) or on another
        # thread (DDP's communication) ends without its start: those ends are dropped first. Should the parse
        # still fail, that is no error of the probe's: the window has no trace, and the record says why.
        try:
            parsed = torch.autograd.profiler_legacy._parse_legacy_records(_matched_ranges(results))
        except Exception as e:
            return TraceUnavailable("torch's legacy profiler could not parse its own records: %s" % str(e)[:300])
        EventList(parsed).export_chrome_trace(path)  # no keywords: their names changed across versions
        return path
    if torch.autograd.kineto_available():
        results.save(path)
        return path
    # A torch without Kineto (Debian's CPU build): the legacy JSON, from the events parsed here.
    parsed = prof._parse_kineto_results(results)
    events = EventList(parsed, use_cuda=getattr(prof, "use_cuda", False), profile_memory=getattr(prof, "profile_memory", False), with_flops=getattr(prof, "with_flops", False))
    events.export_chrome_trace(path)
    return path


def write_snapshot(torch, gpu, path, device, keep_history):
    """The allocator's snapshot (segments, blocks and the window's history) pickled to `path`; the history recording
    stops after it unless it runs for the whole process."""
    with torch.cuda.device(device):
        s = gpu.snapshot()
        if not keep_history:
            gpu.stop_history()
    with open(path, "wb") as f:
        pickle.dump(s, f)
    return path


def export(torch, gpu, legacy, prof, results, trace, snapshot, device, keep_history, fields):
    """Both files written (where given), into the `profile-end` record's `fields`. Timed: the background run holds the
    GIL through torch's C++ writers, so this is time the training thread may have waited too."""
    t0 = time.perf_counter()
    with _quiet_encoding():
        fields["trace"], trace_error = _written(trace, write_trace, torch, legacy, prof, results, trace)
    t1 = time.perf_counter()
    fields["snapshot"], snapshot_error = _written(snapshot, write_snapshot, torch, gpu, snapshot, device, keep_history)
    fields["exportS"] = {"trace": t1 - t0, "snapshot": time.perf_counter() - t1 if snapshot else 0.0}
    if trace_error:
        fields["traceError"] = trace_error
    if snapshot_error:
        fields["snapshotError"] = snapshot_error
